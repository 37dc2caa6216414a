//! `Table::lookup` and `Resolver::resolve` (normal path, table rules and memoized `model`
//! decisions) must not allocate: they run on every MPI call. A counting global allocator
//! (per thread) checks it.

use pcoll::algo::Collective;
use pcoll::config::Config;
use pcoll::decide::{CallFacts, Memo, PlainFacts, Resolver};
use pcoll::model::native::Mpi;
use pcoll::tuning::Table;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: delegates every call unchanged to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(|c| c.get())
}

#[test]
fn lookup_and_choose_do_not_allocate() {
    let t = Table::builtin();
    let (cfg, _) = Config::from_lookup(&|_| None);
    let x = CallFacts::new(Collective::Allreduce, 8, 1 << 20);
    let memo = Memo::new(8);
    let r = Resolver::new(&cfg, &t, Mpi::Mpich).with_memo(Some(&memo));
    // Fill the memo's cells for the sizes asked below (the first answer is computed).
    for bytes in [0, 100, 65535, 65536, 1 << 30, 1 << 20] {
        let _ = r.resolve(&CallFacts { bytes, ..x }, &PlainFacts);
    }
    // Sanity: the counter works.
    let before = allocs();
    let v = std::hint::black_box(vec![1u8; 10]);
    drop(v);
    assert!(allocs() > before);

    let before = allocs();
    let mut n = 0;
    for coll in Collective::ALL {
        for p in [1, 2, 7, 64, 1 << 20] {
            for bytes in [0, 100, 65535, 65536, 1 << 30] {
                n += t.lookup(coll, p, bytes).map_or(0, |c| c.rule);
            }
        }
    }
    for bytes in [0, 100, 65535, 65536, 1 << 30, 1 << 20] {
        n += r
            .resolve(&CallFacts { bytes, ..x }, &PlainFacts)
            .unwrap()
            .segment;
    }
    let d = r.resolve(&x, &PlainFacts).unwrap();
    assert_eq!(allocs(), before, "lookup/resolve allocated");
    std::hint::black_box((n, d));
}
