//! The simulated transport: p ranks as threads in one process.
//!
//! Strict on purpose, so that algorithm bugs show here and not under MPI:
//! * **rendezvous sends**: a send completes only once the matching receive is posted, so any
//!   program that would deadlock under a real MPI's rendezvous protocol deadlocks here, and
//!   the deadlock is detected (every live rank blocked) and reported, never a hang;
//! * matching is FIFO per (sender, receiver) pair, as MPI's non-overtaking rule;
//! * a received message must have exactly the posted length;
//! * a send buffer modified before its send completed is reported;
//! * `MPI_IN_PLACE` is modelled by binding `In` to a range of `Out` (real aliasing);
//! * every rank keeps a Lamport clock (a send takes one round of the sender's port, a
//!   receive completes no earlier than the round it was sent in), so tests can read the
//!   rounds a program actually took.

use crate::algo::{build, Algorithm, CallSpec};
use crate::error::Error;
use crate::exec;
use crate::plan::{Buf, NodeStep, Piece, Program};
use crate::transport::Transport;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{mpsc, Arc, Condvar, Mutex};

mod node;

/// A reduction operator on fixed-size elements: `inout[i] := in[i] ⊕ inout[i]`.
pub trait SimOp: Send + Sync {
    fn elem_bytes(&self) -> usize;
    fn commutative(&self) -> bool;
    fn apply(&self, inp: &[u8], inout: &mut [u8]);
}

/// Wrapping sum of u64 (commutative).
pub struct SumU64;
impl SimOp for SumU64 {
    fn elem_bytes(&self) -> usize {
        8
    }
    fn commutative(&self) -> bool {
        true
    }
    fn apply(&self, inp: &[u8], inout: &mut [u8]) {
        for (a, b) in inp.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
            let v = u64::from_le_bytes(a.try_into().unwrap())
                .wrapping_add(u64::from_le_bytes((&*b).try_into().unwrap()));
            b.copy_from_slice(&v.to_le_bytes());
        }
    }
}

/// Composition of affine maps `t -> a t + b` (mod 2^64): associative, not commutative.
/// `x ⊕ y` = "x, then y" = `(a_x a_y, a_y b_x + b_y)`. Detects wrong order, lost and
/// duplicated contributions.
pub struct Affine;
impl Affine {
    pub fn combine(x: (u64, u64), y: (u64, u64)) -> (u64, u64) {
        (
            x.0.wrapping_mul(y.0),
            y.0.wrapping_mul(x.1).wrapping_add(y.1),
        )
    }
    pub fn get(b: &[u8]) -> (u64, u64) {
        (
            u64::from_le_bytes(b[0..8].try_into().unwrap()),
            u64::from_le_bytes(b[8..16].try_into().unwrap()),
        )
    }
    pub fn put(b: &mut [u8], v: (u64, u64)) {
        b[0..8].copy_from_slice(&v.0.to_le_bytes());
        b[8..16].copy_from_slice(&v.1.to_le_bytes());
    }
}
impl SimOp for Affine {
    fn elem_bytes(&self) -> usize {
        16
    }
    fn commutative(&self) -> bool {
        false
    }
    fn apply(&self, inp: &[u8], inout: &mut [u8]) {
        for (a, b) in inp.chunks_exact(16).zip(inout.chunks_exact_mut(16)) {
            let v = Affine::combine(Affine::get(a), Affine::get(b));
            Affine::put(b, v);
        }
    }
}

#[derive(Default)]
struct Pair {
    sends: VecDeque<(u64, Vec<u8>, u64)>, // (id, data, timestamp)
    recvs: VecDeque<u64>,
}

#[derive(Default)]
struct World {
    pairs: HashMap<(usize, usize), Pair>,
    delivered: HashMap<u64, (Vec<u8>, u64)>,
    matched: HashSet<u64>,
    next_id: u64,
    /// What each blocked rank waits for.
    waiting: HashMap<usize, WaitFor>,
    finished: usize,
    deadlock: bool,
}

#[derive(Clone, Copy, Debug)]
enum WaitFor {
    SendMatched(u64),
    RecvDelivered(u64),
}

impl World {
    fn satisfied(&self, wf: WaitFor) -> bool {
        match wf {
            WaitFor::SendMatched(id) => self.matched.contains(&id),
            WaitFor::RecvDelivered(id) => self.delivered.contains_key(&id),
        }
    }
}

struct Shared {
    p: usize,
    world: Mutex<World>,
    /// One condition variable per rank (all with the `world` mutex): an event wakes only the
    /// ranks whose waits it can satisfy, instead of every rank (which made large-p
    /// simulations spend most of their time in futex wake-ups).
    cv: Vec<Condvar>,
}

impl Shared {
    /// Match the queued sends and receives from `key.0` to `key.1`, waking both ranks if
    /// anything matched.
    fn try_match(&self, w: &mut World, key: (usize, usize)) {
        let pair = w.pairs.entry(key).or_default();
        let mut done = Vec::new();
        while !pair.sends.is_empty() && !pair.recvs.is_empty() {
            let (sid, data, ts) = pair.sends.pop_front().unwrap();
            let rid = pair.recvs.pop_front().unwrap();
            done.push((sid, rid, data, ts));
        }
        if done.is_empty() {
            return;
        }
        for (sid, rid, data, ts) in done {
            w.matched.insert(sid);
            w.delivered.insert(rid, (data, ts));
        }
        self.cv[key.0].notify_one();
        self.cv[key.1].notify_one();
    }
    fn wake_all(&self) {
        for cv in &self.cv {
            cv.notify_one();
        }
    }
}

/// One rank's memory and its view of the world.
pub struct SimTransport {
    shared: Arc<Shared>,
    rank: usize,
    op: Arc<dyn SimOp>,
    eb: usize,
    pub input: Vec<u8>,
    pub out: Option<Vec<u8>>,
    /// `Some(off)`: `In` is bound to `Out[off..]` (MPI_IN_PLACE).
    pub in_alias: Option<usize>,
    tmp: Vec<Vec<u8>>,
    pub clock: u64,
}

pub enum SimReq {
    Send(u64, Vec<Piece>, Vec<u8>),
    Recv(u64, Vec<Piece>),
}

impl SimReq {
    fn waits_for(&self) -> WaitFor {
        match self {
            SimReq::Send(id, ..) => WaitFor::SendMatched(*id),
            SimReq::Recv(id, _) => WaitFor::RecvDelivered(*id),
        }
    }
}

/// A matching space of p simulated ranks for programs driven from one thread with
/// [`crate::exec::Run::advance`] (never blocking, so no thread per rank is needed). One world
/// per outstanding collective: it stands for the distinct tag each one gets under MPI.
#[derive(Clone)]
pub struct SimWorld(Arc<Shared>);

impl SimWorld {
    pub fn new(p: usize) -> SimWorld {
        SimWorld(Arc::new(Shared {
            p,
            world: Mutex::new(World::default()),
            cv: (0..p).map(|_| Condvar::new()).collect(),
        }))
    }
    /// The transport of `rank` in this world, with its buffers.
    pub fn rank(&self, rank: usize, op: Arc<dyn SimOp>, io: RankIo) -> SimTransport {
        let eb = op.elem_bytes();
        SimTransport {
            shared: self.0.clone(),
            rank,
            op,
            eb,
            input: io.input,
            out: io.out,
            in_alias: io.in_alias,
            tmp: Vec::new(),
            clock: 0,
        }
    }
}

impl SimTransport {
    fn bytes(&self, pc: &Piece) -> Result<&[u8], Error> {
        let (lo, hi) = (pc.off * self.eb, pc.end() * self.eb);
        let v: &[u8] = match (pc.buf, self.in_alias) {
            (Buf::In, None) => &self.input,
            (Buf::In, Some(a)) => {
                let o = self
                    .out
                    .as_deref()
                    .ok_or_else(|| Error::Internal("In aliased to unbound Out".into()))?;
                return o
                    .get(lo + a * self.eb..hi + a * self.eb)
                    .ok_or_else(|| Error::Internal(format!("{pc} out of range")));
            }
            (Buf::Out, _) => self
                .out
                .as_deref()
                .ok_or_else(|| Error::Internal(format!("{pc}: Out not bound")))?,
            (Buf::Tmp(k), _) => self
                .tmp
                .get(k as usize)
                .ok_or_else(|| Error::Internal(format!("{pc}: no tmp")))?,
        };
        v.get(lo..hi)
            .ok_or_else(|| Error::Internal(format!("{pc} out of range")))
    }
    fn bytes_mut(&mut self, pc: &Piece) -> Result<&mut [u8], Error> {
        let (lo, hi) = (pc.off * self.eb, pc.end() * self.eb);
        let v: &mut [u8] = match pc.buf {
            Buf::In => return Err(Error::Internal(format!("write into In {pc}"))),
            Buf::Out => self
                .out
                .as_deref_mut()
                .ok_or_else(|| Error::Internal(format!("{pc}: Out not bound")))?,
            Buf::Tmp(k) => self
                .tmp
                .get_mut(k as usize)
                .ok_or_else(|| Error::Internal(format!("{pc}: no tmp")))?,
        };
        v.get_mut(lo..hi)
            .ok_or_else(|| Error::Internal(format!("{pc} out of range")))
    }
    fn gather(&self, pieces: &[Piece]) -> Result<Vec<u8>, Error> {
        let mut v = Vec::new();
        for pc in pieces {
            v.extend_from_slice(self.bytes(pc)?);
        }
        Ok(v)
    }
    /// Block until `wf` is satisfied. Exact deadlock detection, no timing involved: every
    /// blocked rank registers what it waits for, and a deadlock is "every live rank waits and
    /// no registered wait is satisfied".
    fn block_until(&self, wf: WaitFor) -> Result<std::sync::MutexGuard<'_, World>, Error> {
        let mut w = self.shared.world.lock().unwrap();
        if w.satisfied(wf) {
            return Ok(w);
        }
        w.waiting.insert(self.rank, wf);
        loop {
            if w.deadlock {
                return Err(Error::Internal(format!(
                    "deadlock detected (rank {})",
                    self.rank
                )));
            }
            if w.waiting.len() + w.finished == self.shared.p
                && !w.waiting.values().any(|&x| w.satisfied(x))
            {
                w.deadlock = true;
                self.shared.wake_all();
                return Err(Error::Internal(format!(
                    "deadlock detected (rank {})",
                    self.rank
                )));
            }
            w = self.shared.cv[self.rank].wait(w).unwrap();
            if w.satisfied(wf) {
                w.waiting.remove(&self.rank);
                return Ok(w);
            }
        }
    }
    /// Finish `req`, whose wait is satisfied: `got` is what [`take`] took for it.
    fn complete(&mut self, req: &SimReq, got: Option<(Vec<u8>, u64)>) -> Result<(), Error> {
        match (req, got) {
            (SimReq::Send(_, pieces, data), _) => {
                if self.gather(pieces)? != *data {
                    return Err(Error::Internal(format!(
                        "rank {}: send buffer changed before its send completed",
                        self.rank
                    )));
                }
            }
            (SimReq::Recv(_, pieces), Some((data, ts))) => {
                let want: usize = pieces.iter().map(|p| p.len * self.eb).sum();
                if data.len() != want {
                    return Err(Error::Internal(format!(
                        "rank {}: message of {} bytes for a receive of {} bytes",
                        self.rank,
                        data.len(),
                        want
                    )));
                }
                self.clock = self.clock.max(ts);
                let mut at = 0;
                for pc in pieces {
                    let n = pc.len * self.eb;
                    self.bytes_mut(pc)?.copy_from_slice(&data[at..at + n]);
                    at += n;
                }
            }
            (SimReq::Recv(..), None) => return Err(Error::Internal("receive lost".into())),
        }
        Ok(())
    }
}

/// Take what a satisfied wait for `req` produced out of the world.
fn take(w: &mut World, req: &SimReq) -> Option<(Vec<u8>, u64)> {
    match req {
        SimReq::Send(id, ..) => {
            w.matched.remove(id);
            None
        }
        SimReq::Recv(id, _) => w.delivered.remove(id),
    }
}

impl Transport for SimTransport {
    type Request = SimReq;
    fn alloc_tmp(&mut self, sizes: &[usize]) -> Result<(), Error> {
        // Fill scratch with garbage so reads of unwritten scratch show up as wrong results.
        self.tmp = sizes.iter().map(|&n| vec![0xA5; n * self.eb]).collect();
        Ok(())
    }
    fn isend(&mut self, peer: usize, pieces: &[Piece]) -> Result<SimReq, Error> {
        let data = self.gather(pieces)?;
        self.clock += 1;
        let mut w = self.shared.world.lock().unwrap();
        let id = w.next_id;
        w.next_id += 1;
        w.pairs
            .entry((self.rank, peer))
            .or_default()
            .sends
            .push_back((id, data.clone(), self.clock));
        self.shared.try_match(&mut w, (self.rank, peer));
        Ok(SimReq::Send(id, pieces.to_vec(), data))
    }
    fn irecv(&mut self, peer: usize, pieces: &[Piece]) -> Result<SimReq, Error> {
        for pc in pieces {
            // Bounds and writability check; the buffer belongs to MPI until the Wait, so
            // garbage it: a program reading it early gets wrong results.
            self.bytes_mut(pc)?.fill(0xEE);
        }
        let mut w = self.shared.world.lock().unwrap();
        let id = w.next_id;
        w.next_id += 1;
        w.pairs
            .entry((peer, self.rank))
            .or_default()
            .recvs
            .push_back(id);
        self.shared.try_match(&mut w, (peer, self.rank));
        Ok(SimReq::Recv(id, pieces.to_vec()))
    }
    fn wait(&mut self, req: SimReq) -> Result<(), Error> {
        let got = take(&mut *self.block_until(req.waits_for())?, &req);
        self.complete(&req, got)
    }
    fn test(&mut self, req: &mut SimReq) -> Result<bool, Error> {
        let mut w = self.shared.world.lock().unwrap();
        if !w.satisfied(req.waits_for()) {
            return Ok(false);
        }
        let got = take(&mut w, req);
        drop(w);
        self.complete(req, got).map(|()| true)
    }
    fn reduce(&mut self, src: Piece, dst: Piece, src_first: bool) -> Result<(), Error> {
        let s = self.bytes(&src)?.to_vec();
        let op = self.op.clone();
        let d = self.bytes_mut(&dst)?;
        if src_first || op.commutative() {
            op.apply(&s, d);
        } else {
            // dst := dst ⊕ src: op(in = dst, inout = copy of src), then copy back.
            let mut t = s;
            op.apply(d, &mut t);
            d.copy_from_slice(&t);
        }
        Ok(())
    }
    fn copy(&mut self, src: Piece, dst: Piece) -> Result<(), Error> {
        let s = self.bytes(&src)?.to_vec();
        self.bytes_mut(&dst)?.copy_from_slice(&s);
        Ok(())
    }
    /// Simulated by messages (an independent stand-in for the shared window's protocol):
    /// see `SimTransport::node_reduce` and the others.
    fn node(&mut self, members: &[usize], step: &NodeStep) -> Result<(), Error> {
        let me = self.member(members)?;
        match step {
            NodeStep::Reduce {
                root,
                input,
                output,
            } => self.node_reduce(members, me, *root, *input, *output),
            NodeStep::Bcast { root, data } => self.node_bcast(members, me, *root, *data),
            NodeStep::ReduceScatter {
                counts,
                input,
                output,
            } => self.node_reduce_scatter(members, me, counts, *input, *output),
            NodeStep::Allgatherv {
                counts,
                displs,
                data,
            } => self.node_allgatherv(members, me, counts, displs, *data),
        }
    }
}

/// What one rank brings to a simulated call and what it gets back.
#[derive(Clone, Debug)]
pub struct RankIo {
    pub input: Vec<u8>,
    /// Initial contents of `Out` (None: not bound on this rank).
    pub out: Option<Vec<u8>>,
    /// MPI_IN_PLACE: `In` is `Out[off..]` (the `input` field is then ignored).
    pub in_alias: Option<usize>,
}

/// Result of a simulated call on one rank.
#[derive(Clone, Debug)]
pub struct RankResult {
    pub out: Option<Vec<u8>>,
    pub rounds: u64,
    pub declared_rounds: usize,
}

/// Run `alg` for `spec` (rank ignored) on p simulated ranks. Every program is validated
/// before it runs. Returns each rank's `Out` and measured rounds. `spec.in_place` is ignored:
/// each rank's program is built with `in_place` = whether its `In` is bound into `Out`
/// (`RankIo::in_alias`), as the MPI dispatch decides it per rank.
pub fn run(
    alg: Algorithm,
    spec: &CallSpec,
    op: Arc<dyn SimOp>,
    io: Vec<RankIo>,
) -> Result<Vec<RankResult>, Error> {
    let spec0 = spec.clone();
    let has_out: Vec<bool> = io.iter().map(|r| r.out.is_some()).collect();
    let aliased: Vec<bool> = io.iter().map(|r| r.in_alias.is_some()).collect();
    let make = move |rank: usize| -> Result<Program, Error> {
        let spec = CallSpec {
            in_place: aliased[rank],
            ..spec0.for_rank(rank)
        };
        let prog = build(alg, &spec)?;
        prog.validate(
            Some(spec.in_len()),
            spec.out_len().filter(|_| has_out[rank]),
        )
        .map_err(|e| {
            Error::Internal(format!(
                "{} {} p={} rank={}: invalid program: {e}",
                spec.coll, alg, spec.p, rank
            ))
        })?;
        Ok(prog)
    };
    run_programs(spec.p, Arc::new(make), op, io)
}

type Job = Box<dyn FnOnce() + Send>;

/// Idle worker threads of the simulator (a test suite runs hundreds of thousands of simulated
/// calls; spawning p threads for each dominated its run time).
static IDLE: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());

/// Run `job` on an idle worker thread, or on a new one. Every rank of a call needs a thread of
/// its own (ranks block on each other), which a fixed-size pool could not guarantee.
fn pool_run(job: Job) {
    let idle = IDLE.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let job = match idle {
        Some(tx) => match tx.send(job) {
            Ok(()) => return,
            Err(mpsc::SendError(job)) => job,
        },
        None => job,
    };
    let (tx, rx) = mpsc::channel::<Job>();
    tx.send(job).expect("new worker channel");
    std::thread::spawn(move || {
        while let Ok(job) = rx.recv() {
            job();
            IDLE.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(tx.clone());
        }
    });
}

/// Run the program `make(rank)` on each of p simulated ranks.
pub fn run_programs(
    p: usize,
    make: Arc<dyn Fn(usize) -> Result<Program, Error> + Send + Sync>,
    op: Arc<dyn SimOp>,
    io: Vec<RankIo>,
) -> Result<Vec<RankResult>, Error> {
    assert_eq!(io.len(), p);
    let shared = Arc::new(Shared {
        p,
        world: Mutex::new(World::default()),
        cv: (0..p).map(|_| Condvar::new()).collect(),
    });
    let (res_tx, res_rx) = mpsc::channel();
    for (rank, rio) in io.into_iter().enumerate() {
        let shared = shared.clone();
        let op = op.clone();
        let make = make.clone();
        let res_tx = res_tx.clone();
        pool_run(Box::new(move || {
            let body = || -> Result<RankResult, Error> {
                let prog = make(rank)?;
                let eb = op.elem_bytes();
                let mut t = SimTransport {
                    shared: shared.clone(),
                    rank,
                    op,
                    eb,
                    input: rio.input,
                    out: rio.out,
                    in_alias: rio.in_alias,
                    tmp: Vec::new(),
                    clock: 0,
                };
                exec::run(&prog, &mut t)?;
                Ok(RankResult {
                    out: t.out,
                    rounds: t.clock,
                    declared_rounds: prog.rounds,
                })
            };
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
                .unwrap_or_else(|_| Err(Error::Internal("rank panicked".into())));
            {
                let mut w = shared.world.lock().unwrap_or_else(|e| e.into_inner());
                w.finished += 1;
                if res.is_err() {
                    w.deadlock = true; // wake everyone: this rank will not post anything more
                }
                // Every waiting rank re-checks: with this rank gone, the rest may be deadlocked.
                shared.wake_all();
            }
            let _ = res_tx.send((rank, res));
        }));
    }
    drop(res_tx);
    let mut slots: Vec<Option<RankResult>> = (0..p).map(|_| None).collect();
    let mut first_err = None;
    for (rank, r) in res_rx.iter() {
        match r {
            Ok(r) => slots[rank] = Some(r),
            Err(e) => {
                // Prefer the root cause over the deadlock reports it causes on other ranks.
                let is_echo =
                    |e: &Error| matches!(e, Error::Internal(m) if m.starts_with("deadlock"));
                if first_err
                    .as_ref()
                    .is_none_or(|f| is_echo(f) && !is_echo(&e))
                {
                    first_err = Some(e);
                }
            }
        }
    }
    let results: Vec<RankResult> = slots.into_iter().flatten().collect();
    match first_err {
        Some(e) => Err(e),
        None => Ok(results),
    }
}
