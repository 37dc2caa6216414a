//! `Table::lookup` and `config::choose` (normal path) must not allocate: they run on every
//! MPI call. A counting global allocator (per thread) checks it.

use pcoll::algo::{CallSpec, Collective, CostParams};
use pcoll::config::{choose, Config};
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
    let spec = CallSpec {
        coll: Collective::Allreduce,
        p: 8,
        rank: 3,
        root: 0,
        counts: vec![1 << 20],
        displs: vec![],
        commutative: true,
        elem_bytes: 8,
        seg_elems: 0,
        params: CostParams::default(),
        in_place: false,
    };
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
    let d = choose(&cfg, &t, &spec).unwrap();
    assert_eq!(allocs(), before, "lookup/choose allocated");
    std::hint::black_box((n, d));
}
