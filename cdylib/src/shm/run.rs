//! The `shm` protocol over a communicator's window: `pcoll::algo::shm`'s plan, run with
//! copies, `MPI_Reduce_local` and acquire/release counters (module docs there). Waiting spins,
//! then yields the core (`sched_yield`) in its loop: after 200 spins (a spinning rank holds
//! the core, or the hyperthread, the rank it waits for needs), or when the ranks do not
//! outnumber the cores after [`patience`] (default 0; a yield with other jobs on the machine
//! gives the core away for a time slice: a 1 MiB allreduce, p = 2, took 6.6 ms against
//! native's 0.5 ms with other jobs running, but spinning 2 ms lost on a quiet machine).
//! Copies into cells take streaming stores while readers time slow core-to-core transfers
//! ([`super::stream`]).

pub use super::call::{alone, cell_elems, reducible, Call};
use super::call::{combine, dual_stream, dual_to, fold, step, step_len};
use super::stream::{mark_probes, probe, probe_due, stream_now};
use super::{Win, FILLED, READ, REDUCED, SYNC};
use pcoll::algo::shm::xfer::{Kind, Plan, Step};
use pcoll::algo::shm::Shape;
use pcoll::Error;
use std::sync::atomic::{AtomicU64, Ordering};

/// Spins before the first yield when the ranks outnumber the cores.
const SPINS: u32 = 200;

/// Spinning before the first yield otherwise (`PCOLL_SHM_PATIENCE_US`, default 0: on a quiet
/// machine 2000 made a p = 2 reduce 1.4-1.8x native against 0.45-0.71x, allreduce alike).
fn patience() -> std::time::Duration {
    static D: once_cell::sync::Lazy<std::time::Duration> = once_cell::sync::Lazy::new(|| {
        let us = std::env::var("PCOLL_SHM_PATIENCE_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        std::time::Duration::from_micros(us)
    });
    *D
}

/// A wait found longer than this (checked every 64th yield) sleeps [`NAP`] between checks.
const LONG_WAIT: std::time::Duration = std::time::Duration::from_millis(1);
const NAP: std::time::Duration = std::time::Duration::from_micros(50);

/// Fewest bytes a rank reduces as a slice of its own.
const MIN_SLICE_BYTES: usize = 16 << 10;

/// Pauses between two looks at counters that have not moved yet: spins, then yields the core
/// (or naps once the wait is long); at every yield it advances pcoll's non-blocking
/// collectives and pokes the MPI's progress engine ([`Win::poke`]): the rank this one waits
/// for may be waiting for one of them, or for a message of this one's still in the MPI.
struct Backoff<'a> {
    /// The window waited on (its node's communicator drives the MPI's progress).
    w: &'a Win,
    n: u32,
    since: Option<std::time::Instant>,
    long: bool,
    /// The ranks do not outnumber the cores.
    patient: bool,
}

impl<'a> Backoff<'a> {
    fn new(w: &'a Win) -> Backoff<'a> {
        let p = w.p;
        Backoff {
            w,
            n: 0,
            since: None,
            long: false,
            patient: p <= cores(),
        }
    }
    /// Something moved: the next wait starts afresh.
    fn reset(&mut self) {
        self.n = 0;
        self.since = None;
        self.long = false;
    }
    fn pause(&mut self) {
        self.n = self.n.wrapping_add(1);
        let n = self.n;
        if n < SPINS || (self.patient && !n.is_multiple_of(256)) {
            std::hint::spin_loop();
            return;
        }
        if self.patient
            && self
                .since
                .get_or_insert_with(std::time::Instant::now)
                .elapsed()
                < patience()
        {
            std::hint::spin_loop();
            return;
        }
        crate::nbc::progress();
        self.w.poke();
        if self.long
            || (n.is_multiple_of(64)
                && self
                    .since
                    .get_or_insert_with(std::time::Instant::now)
                    .elapsed()
                    > LONG_WAIT)
        {
            self.long = true;
            // A long wait (a node step of `hier` waits for its leader's network step): give
            // the core away for a while instead of yielding in a loop, which takes it back
            // from the ranks doing the work when they outnumber the cores.
            std::thread::sleep(NAP);
        } else {
            std::thread::yield_now();
        }
    }
}

/// Has counter `c` reached `at_least` (acquire)?
fn reached(c: &AtomicU64, at_least: u64) -> bool {
    c.load(Ordering::Acquire) >= at_least
}

/// Cores this process may run on.
fn cores() -> usize {
    static N: once_cell::sync::Lazy<usize> =
        once_cell::sync::Lazy::new(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    *N
}

/// The shape of `call` on `w` (the same on every rank).
fn shape(w: &Win, call: &Call) -> Result<Shape, Error> {
    let ce = cell_elems(w.cell, &call.facts)
        .ok_or_else(|| Error::Unsupported("an element larger than a shm cell".into()))?;
    Ok(Shape {
        p: w.p,
        root: call.root,
        count: call.count,
        cell_elems: pcoll::algo::shm::chunk_elems(call.count, ce, w.split && !call.all),
        min_slice: (MIN_SLICE_BYTES / call.facts.size.max(1)).max(1),
        all: call.all,
        commutative: call.commutative,
        combine_at_root: super::combine_at_root(),
        replicate: (w.p - 1).saturating_mul(call.count * call.facts.size)
            <= super::replicate_bytes(w.fresh),
    })
}

/// Where this rank stands in one call on a window. The protocol's waits are looks at the
/// counters that return "not yet" instead of waiting, so a call is run by advancing its
/// cursor: to the end in a loop ([`run`], [`run_plan`], the blocking forms) or as far as it
/// goes from the completion calls ([`Op`], the non-blocking forms).
///
/// A call takes the next chunk numbers of the window when it starts (the same on every rank:
/// collectives start in one order), and runs a chunk only once this rank has finished every
/// earlier chunk of the window: outstanding calls run in the order they were started.
pub struct Cursor {
    /// The window's chunk count before the call's first chunk.
    base: u64,
    chunks: usize,
    /// The call's chunk this rank is in.
    c: usize,
    phase: Phase,
    /// Where in the phase: the rank (`Slot`), the fold's input (`Fold`), the slice (`Out`),
    /// the plan's step (`Steps`).
    i: usize,
    /// A reader timed one transfer in this call (`probe_due`).
    probed: bool,
    /// A plan's steps for chunk `c` (made once per chunk), and how many fill the cell.
    steps: Vec<Step>,
    fills: usize,
    made: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Wait until every rank has read the slot's previous chunk.
    Slot,
    /// Copy in, publish `filled`.
    Fill,
    /// Reduce the own slice (reduce, allreduce).
    Fold,
    /// Copy the slices out (reduce, allreduce).
    Out,
    /// A plan's steps after the fill (bcast, allgatherv, reduce_scatter).
    Steps,
}

impl Cursor {
    /// Take the window's next `chunks` chunk numbers.
    fn start(w: &Win, chunks: usize) -> Result<Cursor, Error> {
        let mut inner = w.locked()?;
        let base = inner.seq;
        inner.seq += chunks as u64;
        Ok(Cursor {
            base,
            chunks,
            c: 0,
            phase: Phase::Slot,
            i: 0,
            probed: false,
            steps: Vec::new(),
            fills: 0,
            made: false,
        })
    }
    /// The chunk after this one.
    fn next(&mut self) {
        self.c += 1;
        self.phase = Phase::Slot;
        self.i = 0;
        self.steps.clear();
        self.made = false;
    }
    /// In phase `Slot` of chunk `g`: is its slot free, every rank (from rank `i` on) having
    /// read chunk g - slots? Then on to `Fill`.
    fn slot_free(&mut self, bases: &[*mut u8], (p, slots): (usize, usize), g: u64) -> bool {
        if g > slots as u64 {
            while self.i < p {
                if !reached(Win::word(bases, self.i, READ), g - slots as u64) {
                    return false;
                }
                self.i += 1;
            }
        }
        self.phase = Phase::Fill;
        self.i = 0;
        true
    }
    /// Where it stands (to tell whether an advance moved).
    fn mark(&self) -> (usize, Phase, usize) {
        (self.c, self.phase, self.i)
    }
    /// Advance over the window's chunks: `each` runs one chunk as far as it goes (`true`:
    /// finished). `Ok(true)` once the call is done here.
    fn advance(
        &mut self,
        w: &Win,
        mut each: impl FnMut(&[*mut u8], &mut Cursor) -> Result<bool, Error>,
    ) -> Result<bool, Error> {
        let mut guard = w.locked()?;
        let inner = &mut *guard;
        while self.c < self.chunks {
            // An earlier call on the window is not done here yet.
            if inner.done < self.base + self.c as u64 {
                return Ok(false);
            }
            if !each(&inner.bases, self)? {
                return Ok(false);
            }
            inner.done += 1;
            self.next();
        }
        Ok(true)
    }
}

/// Advance until done, pausing ([`Backoff`]) while nothing moves.
fn finish(
    w: &Win,
    cur: &mut Cursor,
    mut advance: impl FnMut(&mut Cursor) -> Result<bool, Error>,
) -> Result<(), Error> {
    let mut b = Backoff::new(w);
    loop {
        let before = cur.mark();
        if advance(cur)? {
            return Ok(());
        }
        if cur.mark() != before {
            b.reset();
        }
        b.pause();
    }
}

/// A barrier of the window's ranks, entered by every rank at the same call of the
/// communicator (a timed call of a raced cell: `crate::learn::Explore::start`): each publishes
/// its count of barriers in its [`SYNC`] word and waits ([`Backoff`], the lock released) until
/// every other rank's has reached it. One cache line each way, where `MPI_Barrier` on the
/// shadow took 0.35-0.85 us after a barrier at p = 2 on session 39's VM (five MPIs).
pub fn barrier(w: &Win) -> Result<(), Error> {
    let (me, p) = (w.rank, w.p);
    let epoch = {
        let mut inner = w.locked()?;
        inner.syncs += 1;
        Win::word(&inner.bases, me, SYNC).store(inner.syncs, Ordering::Release);
        inner.syncs
    };
    let mut b = Backoff::new(w);
    let mut k = 0;
    while k < p {
        {
            let inner = w.locked()?;
            while k < p && (k == me || reached(Win::word(&inner.bases, k, SYNC), epoch)) {
                k += 1;
            }
        }
        if k < p {
            b.pause();
        }
    }
    Ok(())
}

/// Run `call` over `w` (every rank of the communicator with the same shape).
pub fn run(w: &Win, call: &Call) -> Result<(), Error> {
    let s = shape(w, call)?;
    let mut cur = Cursor::start(w, s.chunks())?;
    finish(w, &mut cur, |cur| advance_reduce(w, call, &s, cur))
}

/// Advance a reduce or allreduce's cursor as far as it goes; `Ok(true)` once done here.
fn advance_reduce(w: &Win, call: &Call, s: &Shape, cur: &mut Cursor) -> Result<bool, Error> {
    cur.advance(w, |bases, cur| chunk(&At { w, bases, call, s }, cur))
}

/// A call started on a window and advanced without blocking (the non-blocking forms:
/// `crate::dispatch::nb`): a reduce or allreduce, or a bcast, allgather(v) or
/// reduce_scatter(_block) plan.
pub struct Op {
    w: &'static Win,
    call: Call,
    what: What,
    cur: Cursor,
    /// Advances that found nothing to do (every [`POKE_EVERY`]th pokes the MPI's progress).
    idle: u32,
}

/// An [`Op`] advanced this many times in vain pokes the MPI's progress engine ([`Win::poke`]):
/// a completion call waiting only for pcoll's requests makes no other MPI call, and the rank
/// this one waits for may wait for a message of this one's still inside the MPI.
const POKE_EVERY: u32 = 64;

enum What {
    Reduce(Shape),
    /// A plan's parts (its counts and displacements owned here).
    Plan {
        kind: Kind,
        counts: Vec<usize>,
        displs: Vec<usize>,
        cell_elems: usize,
        in_place: bool,
    },
}

impl Op {
    /// Start the reduce or allreduce `call` on `w`: its chunks follow every call started on
    /// the window before.
    pub fn start(w: &'static Win, call: Call) -> Result<Op, Error> {
        let s = shape(w, &call)?;
        let cur = Cursor::start(w, s.chunks())?;
        Ok(Op {
            w,
            call,
            what: What::Reduce(s),
            cur,
            idle: 0,
        })
    }
    /// Start `plan` (of `call`) on `w`, as [`Op::start`].
    pub fn start_plan(w: &'static Win, call: Call, plan: &Plan) -> Result<Op, Error> {
        let plan = &plan.chunked(split_plan(w, plan));
        let cur = Cursor::start(w, plan.chunks())?;
        let what = What::Plan {
            kind: plan.kind,
            counts: plan.counts.to_vec(),
            displs: plan.displs.to_vec(),
            cell_elems: plan.cell_elems,
            in_place: plan.in_place,
        };
        Ok(Op {
            w,
            call,
            what,
            cur,
            idle: 0,
        })
    }
    /// Advance as far as the other ranks allow; `Ok(true)` once done.
    pub fn advance(&mut self) -> Result<bool, Error> {
        let before = self.cur.mark();
        let done = self.step()?;
        if done || self.cur.mark() != before {
            self.idle = 0;
        } else {
            self.idle = self.idle.wrapping_add(1);
            if self.idle.is_multiple_of(POKE_EVERY) {
                self.w.poke();
            }
        }
        Ok(done)
    }
    fn step(&mut self) -> Result<bool, Error> {
        let (w, call) = (self.w, &self.call);
        match &self.what {
            What::Reduce(s) => advance_reduce(w, call, s, &mut self.cur),
            What::Plan {
                kind,
                counts,
                displs,
                cell_elems,
                in_place,
            } => {
                let plan = Plan {
                    kind: *kind,
                    p: w.p,
                    counts,
                    displs,
                    cell_elems: *cell_elems,
                    in_place: *in_place,
                };
                self.cur
                    .advance(w, |bases, cur| plan_chunk(w, bases, call, &plan, cur))
            }
        }
    }
}

/// A reduce or allreduce call on a window: what its chunks share.
struct At<'a> {
    w: &'a Win,
    bases: &'a [*mut u8],
    call: &'a Call,
    s: &'a Shape,
}

impl At<'_> {
    /// Chunk `g`'s slot and offset in its cells.
    fn place(&self, g: u64) -> (usize, usize) {
        self.w.place(g, self.call.span_bytes(self.s.span()))
    }
}

/// Chunk `cur.c` of a reduce or allreduce, from where the cursor stands; `Ok(false)` where
/// another rank has not got far enough yet.
fn chunk(at: &At, cur: &mut Cursor) -> Result<bool, Error> {
    let (w, bases, call, s) = (at.w, at.bases, at.call, at.s);
    let (me, p) = (w.rank, w.p);
    let c = cur.c;
    let g = cur.base + c as u64 + 1;
    let counter = |k: usize, off: usize| Win::word(bases, k, off);
    loop {
        match cur.phase {
            Phase::Slot => {
                if !cur.slot_free(bases, (p, w.slots), g) {
                    return Ok(false);
                }
            }
            Phase::Fill => {
                // 1. Copy in the slices others read.
                fill(at, c, g)?;
                // A reader times one transfer per call (`probe_due`).
                cur.probed = c > 0 || !probe_due(s.count * call.facts.size);
                cur.phase = Phase::Fold;
            }
            Phase::Fold => {
                // 2. Reduce the own slice (unless its partial is the copied-in input itself).
                if !fold_own(at, c, g, cur)? {
                    return Ok(false);
                }
                cur.phase = Phase::Out;
                cur.i = 0;
            }
            Phase::Out => {
                // 3. Copy out (root last: x_root ⊕ partial).
                if s.copies_out(me) && !copy_out(at, c, g, cur)? {
                    return Ok(false);
                }
                counter(me, READ).store(g, Ordering::Release);
                return Ok(true);
            }
            Phase::Steps => unreachable!("a reduce has no plan steps"),
        }
    }
}

/// Step 2 of chunk `c` (global number `g`): reduce the own slice, from the fold's input
/// `cur.i` on (unless its partial is the copied-in input itself), then publish `reduced`;
/// `Ok(false)` where an input's rank has not filled its cell yet.
fn fold_own(at: &At, c: usize, g: u64, cur: &mut Cursor) -> Result<bool, Error> {
    let (w, bases, call, s) = (at.w, at.bases, at.call, at.s);
    let me = w.rank;
    let (lo, hi) = s.chunk(c);
    let len = hi - lo;
    let slot = at.place(g);
    let mine = s.slice_of(me, len);
    if let Some(j) = mine.filter(|&j| !s.partial_in_input(j)) {
        let (first, rest) = s.fold(me, j);
        while cur.i <= rest.len() {
            let k = if cur.i == 0 { first } else { rest[cur.i - 1] };
            if k != me {
                if !reached(Win::word(bases, k, FILLED), g) {
                    return Ok(false);
                }
                if !cur.probed {
                    probe(bases, k);
                    cur.probed = true;
                }
            }
            cur.i += 1;
        }
        let own_cell = s.copies_in(me, j, len, call.in_place);
        let (a, b) = s.slice(len, j);
        let x = |k: usize| -> *const u8 {
            if k == me && !own_cell {
                call.at(call.input, lo + a)
            } else {
                call.cell_at(w.cell_ptr(bases, k, slot, false), a)
            }
        };
        let acc = if s.direct(me, j) {
            call.at(call.output, lo + a)
        } else {
            call.cell_at(w.cell_ptr(bases, me, slot, true), a)
        };
        if let Some((dual, z)) = dual_to(call, s, (me, j), len, lo + a) {
            let n = b - a;
            // SAFETY: n aligned elements at each (`dual_to`); `acc` is this rank's output
            // cell, which nothing else is; `z` is the receive buffer's slice, which is the
            // own input `x(first)` in place and overlaps no input otherwise. While copies
            // stream (a slow spell) the cell's stores stream too.
            unsafe {
                if stream_now(bases, n * call.facts.size) {
                    dual_stream(call, (x(rest[0]), x(first)), z, acc, n);
                } else {
                    dual(x(rest[0]), x(first), z, acc, n);
                }
            }
        } else {
            fold(call, (first, rest), &x, acc, b - a)?;
        }
    }
    if mine.is_some() {
        Win::word(bases, me, REDUCED).store(g, Ordering::Release);
    }
    Ok(true)
}

/// Step 1 of chunk `c` (global number `g`): copy in the slices others read, then publish
/// `filled` (after the probe lines).
fn fill(at: &At, c: usize, g: u64) -> Result<(), Error> {
    let (w, bases, call, s) = (at.w, at.bases, at.call, at.s);
    let me = w.rank;
    let (lo, hi) = s.chunk(c);
    let len = hi - lo;
    let my_in = w.cell_ptr(bases, me, at.place(g), false);
    let streaming = stream_now(bases, len * call.facts.size);
    for j in 0..s.nslices(len) {
        if s.copies_in(me, j, len, call.in_place) {
            let (a, b) = s.slice(len, j);
            let (from, to) = (call.at(call.input, lo + a), call.cell_at(my_in, a));
            call.copy_in(from, to, b - a, streaming)?;
        }
    }
    mark_probes(bases, me, g);
    Win::word(bases, me, FILLED).store(g, Ordering::Release);
    Ok(())
}

/// Step 3 of chunk `c` (global number `g`): copy the slices out of their owners' cells (the
/// root's own slice of a reduce is already in place), combining `x_root ⊕ partial` where the
/// root comes last; probe an owner unless the cursor has. From slice `cur.i` on; `Ok(false)`
/// where an owner has not reduced its slice yet.
fn copy_out(at: &At, c: usize, g: u64, cur: &mut Cursor) -> Result<bool, Error> {
    let (w, bases, call, s) = (at.w, at.bases, at.call, at.s);
    let me = w.rank;
    let (lo, hi) = s.chunk(c);
    let len = hi - lo;
    let slot = at.place(g);
    while cur.i < s.nslices(len) {
        let j = cur.i;
        let (a, b) = s.slice(len, j);
        // The own slice of an allreduce may be in the receive buffer already (`dual_to`).
        if !s.direct(me, j) && dual_to(call, s, (me, j), len, lo + a).is_none() {
            let owner = s.owner(j);
            if !reached(Win::word(bases, owner, REDUCED), g) {
                return Ok(false);
            }
            if !cur.probed && owner != me {
                probe(bases, owner);
                cur.probed = true;
            }
            let cell = w.cell_ptr(bases, owner, slot, !s.partial_in_input(j));
            let from = call.cell_at(cell, a);
            let to = call.at(call.output, lo + a);
            if s.combines(j) {
                combine(call, call.at(call.input, lo + a), from, to, b - a)?;
            } else {
                call.copy(from, to, b - a)?;
            }
        }
        cur.i += 1;
    }
    Ok(true)
}

/// Does `plan` run in quarter cells ([`Plan::chunked`])? A bcast on a window that splits
/// ([`Win::split`]): the root copies chunk c + 1 in while the others copy chunk c out, where
/// one chunk made the copies follow each other (forced, Open MPI 4.1, p = 2, 256 KiB: 26-27 ->
/// 11-22 us, four processes each). An allgatherv's or reduce_scatter's quarter chunks measured
/// even or slower at 64 KiB-1 MiB (reduce_scatter_block 128-256 KiB: 5.8-9.8 -> 10-14.5 us).
fn split_plan(w: &Win, plan: &Plan) -> bool {
    w.split && matches!(plan.kind, Kind::Bcast { .. })
}

/// Run a bcast, allgatherv or reduce_scatter plan (`pcoll::algo::shm::xfer`) over `w` (None:
/// one rank, whose plan reads no cell): `call.input` and `call.output` are the bases its
/// `src` and `dst` offsets count from, in elements of `call.facts`.
pub fn run_plan(w: Option<&Win>, call: &Call, plan: &Plan) -> Result<(), Error> {
    let Some(w) = w else {
        for c in 0..plan.chunks() {
            for s in plan.steps(0, c) {
                step(call, 0, &s, &|_| std::ptr::null_mut(), false)?;
            }
        }
        return Ok(());
    };
    let plan = &plan.chunked(split_plan(w, plan));
    let mut cur = Cursor::start(w, plan.chunks())?;
    finish(w, &mut cur, |cur| {
        cur.advance(w, |bases, cur| plan_chunk(w, bases, call, plan, cur))
    })
}

/// Chunk `cur.c` of a plan, from where the cursor stands; `Ok(false)` where another rank has
/// not got far enough yet.
fn plan_chunk(
    w: &Win,
    bases: &[*mut u8],
    call: &Call,
    plan: &Plan,
    cur: &mut Cursor,
) -> Result<bool, Error> {
    let (me, p) = (w.rank, w.p);
    let g = cur.base + cur.c as u64 + 1;
    let slot = w.place(g, call.span_bytes(plan.span()));
    let counter = |k: usize, off: usize| Win::word(bases, k, off);
    let cell = |k: usize| w.cell_ptr(bases, k, slot, false);
    let bytes = |v: &[Step]| -> usize { v.iter().map(step_len).sum::<usize>() * call.facts.size };
    loop {
        match cur.phase {
            Phase::Slot => {
                if !cur.made {
                    cur.steps = plan.steps(me, cur.c);
                    cur.fills = cur.steps.iter().take_while(|s| s.fills()).count();
                    cur.made = true;
                }
                // A chunk this rank copies nothing into needs no free slot.
                if cur.fills > 0 && !cur.slot_free(bases, (p, w.slots), g) {
                    return Ok(false);
                }
                cur.phase = Phase::Fill;
                cur.i = 0;
            }
            Phase::Fill => {
                let fills = &cur.steps[..cur.fills];
                let streaming = stream_now(bases, bytes(fills));
                for s in fills {
                    step(call, me, s, &cell, streaming)?;
                }
                mark_probes(bases, me, g);
                counter(me, FILLED).store(g, Ordering::Release);
                // A reader times one transfer per call (`probe_due`).
                cur.probed = cur.c > 0 || !probe_due(bytes(&cur.steps[cur.fills..]));
                cur.phase = Phase::Steps;
                cur.i = cur.fills;
            }
            Phase::Steps => {
                let Cursor {
                    steps, i, probed, ..
                } = cur;
                while *i < steps.len() {
                    let s = &steps[*i];
                    for k in s.reads() {
                        if k != me {
                            if !reached(counter(k, FILLED), g) {
                                return Ok(false);
                            }
                            if !*probed {
                                probe(bases, k);
                                *probed = true;
                            }
                        }
                    }
                    step(call, me, s, &cell, false)?;
                    *i += 1;
                }
                counter(me, READ).store(g, Ordering::Release);
                return Ok(true);
            }
            Phase::Fold | Phase::Out => unreachable!("a plan has no reduce phases"),
        }
    }
}
