//! `PmpiTransport`: the only code that moves user data through `PMPI_*` point-to-point calls.
//!
//! Buffers are addressed by element: element `i` of a buffer is at `base + i * extent`, and
//! every transfer, copy and reduction is expressed with the user's datatype, so derived
//! datatypes with holes are read and written only where they have data. A message of
//! several pieces is sent as one `hindexed` datatype over `MPI_BOTTOM` (no packing copy).

use crate::consts;
use crate::mpi_types::TypeFacts;
use crate::pack;
use mpi_sys::*;
use pcoll::algo::shm::xfer::Plan;
use pcoll::plan::{Buf, NodeStep, Piece};
use pcoll::transport::Transport;
use pcoll::Error;
use std::os::raw::{c_int, c_void};

/// The tag of the blocking collectives' messages (on a private shadow communicator).
const TAG: c_int = 7411;

/// Scratch memory aligned for any element type.
pub struct Scratch {
    mem: Vec<u128>,
}

impl Scratch {
    fn new(bytes: usize) -> Result<Scratch, Error> {
        let n = bytes.div_ceil(16);
        let mut mem = Vec::new();
        mem.try_reserve_exact(n).map_err(|_| Error::NoMem(bytes))?;
        mem.resize(n, 0);
        Ok(Scratch { mem })
    }
    pub(crate) fn ptr(&mut self) -> *mut u8 {
        self.mem.as_mut_ptr() as *mut u8
    }
    pub(crate) fn ptr_const(&self) -> *const u8 {
        self.mem.as_ptr() as *const u8
    }
    fn bytes(&self) -> usize {
        self.mem.len() * 16
    }
}

/// Scratch buffers kept between calls on one communicator, so that repeated collectives do
/// not allocate (and zero) their temporaries every time. Bounded in count and bytes.
#[derive(Default)]
pub struct ScratchPool {
    free: parking_lot::Mutex<Vec<Scratch>>,
}

const POOL_MAX_BUFFERS: usize = 8;
const POOL_MAX_BYTES: usize = 256 << 20;

impl ScratchPool {
    pub(crate) fn take(&self, bytes: usize) -> Result<Scratch, Error> {
        let mut free = self.free.lock();
        // Smallest buffer that fits.
        let best = free
            .iter()
            .enumerate()
            .filter(|(_, s)| s.bytes() >= bytes)
            .min_by_key(|(_, s)| s.bytes())
            .map(|(i, _)| i);
        match best {
            Some(i) => Ok(free.swap_remove(i)),
            None => {
                drop(free);
                Scratch::new(bytes)
            }
        }
    }
    pub(crate) fn give(&self, s: Scratch) {
        let mut free = self.free.lock();
        let total: usize = free.iter().map(|x| x.bytes()).sum();
        if free.len() < POOL_MAX_BUFFERS && total + s.bytes() <= POOL_MAX_BYTES {
            free.push(s);
        }
    }
}

/// A posted message: `len` MPI requests (its chunks) from `start` in the transport's list.
#[derive(Clone, Copy, Debug)]
pub struct Req {
    start: u32,
    len: u32,
}

/// How messages are split into chunks (see `PmpiTransport::post`); the same on every rank
/// of a call, since it depends only on the element size, the environment and the nodes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Chunking<'a> {
    /// Elements per chunk (0: never split).
    pub elems: usize,
    /// Largest message (bytes) that is split; larger ones go whole.
    pub max_bytes: usize,
    /// The same for a peer on this rank's node, and the node of each rank (`None`: every peer
    /// counts as remote).
    pub local: Option<(usize, &'a [usize])>,
}

thread_local! {
    /// The request list of the last call on this thread, kept for its capacity.
    static SPARE: std::cell::Cell<Vec<MPI_Request>> = const { std::cell::Cell::new(Vec::new()) };
}

pub struct PmpiTransport<'a> {
    pool: &'a ScratchPool,
    comm: MPI_Comm,
    dt: MPI_Datatype,
    op: MPI_Op,
    f: TypeFacts,
    commutative: bool,
    in_base: *const u8,
    out_base: *mut u8,
    tmp: Vec<(Scratch, usize)>,
    scratch: Option<Scratch>,
    /// Every MPI request posted in this call (a `Req` is a range of it).
    reqs: Vec<MPI_Request>,
    chunk_elems: usize,
    chunk_max: usize,
    /// `Chunking::local`, and this rank (see [`PmpiTransport::chunk_max`]).
    chunk_local: Option<(usize, &'a [usize])>,
    rank: usize,
    /// The window of this rank's node, for `hier`'s node steps (`Op::NodeReduce`, ...).
    node: Option<&'a crate::shm::Win>,
    /// The tag of this call's messages ([`TAG`], or a non-blocking collective's own).
    tag: c_int,
    pub stats_msgs: usize,
}

fn check(rc: c_int, what: &str) -> Result<(), Error> {
    if rc == consts::SUCCESS() {
        Ok(())
    } else {
        Err(Error::Mpi(rc, what.to_string()))
    }
}

impl Drop for PmpiTransport<'_> {
    fn drop(&mut self) {
        for (s, _) in self.tmp.drain(..) {
            self.pool.give(s);
        }
        if let Some(s) = self.scratch.take() {
            self.pool.give(s);
        }
        let mut reqs = std::mem::take(&mut self.reqs);
        reqs.clear();
        let _ = SPARE.try_with(|c| c.set(reqs));
    }
}

impl<'a> PmpiTransport<'a> {
    /// `in_base`/`out_base`: the user's buffers (`In` may equal part of `Out` for in-place).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        pool: &'a ScratchPool,
        comm: MPI_Comm,
        dt: MPI_Datatype,
        op: MPI_Op,
        f: TypeFacts,
        commutative: bool,
        in_base: *const c_void,
        out_base: *mut c_void,
        chunking: Chunking<'a>,
        rank: usize,
    ) -> PmpiTransport<'a> {
        PmpiTransport {
            pool,
            comm,
            dt,
            op,
            f,
            commutative,
            in_base: in_base as *const u8,
            out_base: out_base as *mut u8,
            tmp: Vec::new(),
            scratch: None,
            reqs: SPARE.try_with(|c| c.take()).unwrap_or_default(),
            chunk_elems: chunking.elems,
            chunk_max: chunking.max_bytes,
            chunk_local: chunking.local,
            rank,
            node: None,
            tag: TAG,
            stats_msgs: 0,
        }
    }

    /// Run the program's node steps on `w`, the window of this rank's node.
    pub fn with_node(mut self, w: Option<&'a crate::shm::Win>) -> PmpiTransport<'a> {
        self.node = w;
        self
    }

    /// A node step's window: this rank's node's, of as many ranks as the step's members.
    fn node_win(&self, members: &[usize]) -> Result<&'a crate::shm::Win, Error> {
        match self.node {
            Some(w) if w.ranks() == members.len() => Ok(w),
            _ => Err(Error::Internal(format!(
                "node step over {members:?} without its node's window"
            ))),
        }
    }

    /// A node step as `shm` runs a call: `n` elements of the call's type and op.
    fn node_call(
        &self,
        input: *const u8,
        output: *mut u8,
        n: usize,
        root: usize,
    ) -> crate::shm::run::Call {
        crate::shm::run::Call {
            input,
            output,
            count: n,
            dt: self.dt,
            op: self.op,
            facts: self.f,
            commutative: self.commutative,
            root,
            all: false,
            in_place: std::ptr::eq(input, output),
            fused: if self.f.contiguous() {
                crate::shm::kernel::fused(self.op, self.dt)
            } else {
                None
            },
        }
    }

    /// Messages on `tag` instead of the blocking collectives' [`TAG`] (an outstanding
    /// non-blocking collective's messages must never match another collective's).
    pub fn with_tag(mut self, tag: c_int) -> Self {
        self.tag = tag;
        self
    }

    /// Address of element `pc.off` of its buffer (a raw pointer; never dereferenced here).
    fn addr(&mut self, pc: &Piece) -> Result<*mut u8, Error> {
        let base = match pc.buf {
            Buf::In => self.in_base as *mut u8,
            Buf::Out => self.out_base,
            Buf::Tmp(k) => {
                let (s, _) = self
                    .tmp
                    .get_mut(k as usize)
                    .ok_or_else(|| Error::Internal(format!("no scratch {k}")))?;
                // Element data starts at true_lb: shift the base so that it lies inside.
                s.ptr().wrapping_offset(-self.f.true_lb)
            }
        };
        Ok(base.wrapping_offset(pc.off as isize * self.f.extent))
    }

    fn count(len: usize) -> Result<c_int, Error> {
        c_int::try_from(len)
            .map_err(|_| Error::Unsupported(format!("{len} elements exceed an MPI int count")))
    }

    /// (buffer, count, datatype, owned) for elements `[lo, hi)` of the message made of
    /// `pieces` in order; an owned datatype must be freed after posting.
    fn message(
        &mut self,
        pieces: &[Piece],
        lo: usize,
        hi: usize,
    ) -> Result<(*mut u8, c_int, MPI_Datatype, bool), Error> {
        let parts = || {
            pieces
                .iter()
                .scan(0usize, |pos, p| {
                    let start = *pos;
                    *pos += p.len;
                    Some((start, p))
                })
                .filter_map(move |(start, p)| {
                    let (a, b) = (lo.max(start), hi.min(start + p.len));
                    (a < b).then(|| Piece::new(p.buf, p.off + (a - start), b - a))
                })
        };
        let mut it = parts();
        let (Some(first), second) = (it.next(), it.next()) else {
            return Ok((self.in_base as *mut u8, 0, self.dt, false));
        };
        if second.is_none() {
            return Ok((self.addr(&first)?, Self::count(first.len)?, self.dt, false));
        }
        let mut lens = Vec::new();
        let mut displs = Vec::new();
        for p in parts() {
            lens.push(Self::count(p.len)?);
            let a = self.addr(&p)?;
            let mut d: MPI_Aint = 0;
            // SAFETY: MPI_Get_address only computes the address value.
            check(
                unsafe { PMPI_Get_address(a as *const c_void, &mut d) },
                "MPI_Get_address",
            )?;
            displs.push(d);
        }
        let mut t: MPI_Datatype = consts::datatype_null();
        // SAFETY: arrays of equal length `lens.len()`; out-pointer to a local.
        unsafe {
            check(
                PMPI_Type_create_hindexed(
                    lens.len() as c_int,
                    lens.as_ptr(),
                    displs.as_ptr(),
                    self.dt,
                    &mut t,
                ),
                "MPI_Type_create_hindexed",
            )?;
            check(PMPI_Type_commit(&mut t), "MPI_Type_commit")?;
        }
        Ok((consts::bottom() as *mut u8, 1, t, true))
    }

    /// The largest message to or from `peer` sent as chunks: [`Chunking::local`]'s bound if
    /// `peer` is on this rank's node (the same answer on both sides of a message).
    fn chunk_max(&self, peer: usize) -> usize {
        match self.chunk_local {
            Some((max, node_of)) if node_of.get(peer) == node_of.get(self.rank) => max,
            _ => self.chunk_max,
        }
    }

    /// Post one message (`send` or receive) of `pieces` to/from `peer`: as one MPI message,
    /// or, between `chunk` and `chunk_max` bytes, as consecutive chunks of at most `chunk`
    /// bytes (both sides split the same element count the same way, and MPI keeps messages
    /// between two ranks on one tag in order, so chunk k meets chunk k). Chunks below the
    /// MPI's eager limit avoid its rendezvous handshake, which costs more than the copy for
    /// messages of a few KiB to a few hundred KiB on shared memory.
    fn post(&mut self, send: bool, peer: usize, pieces: &[Piece]) -> Result<Req, Error> {
        let n: usize = pieces.iter().map(|p| p.len).sum();
        let per = self.chunk_elems;
        let chunked = per > 0 && n > per && n * self.f.size <= self.chunk_max(peer);
        let step = if chunked { per } else { n.max(1) };
        let start = self.reqs.len();
        let mut lo = 0;
        loop {
            let hi = (lo + step).min(n);
            let (buf, cnt, mut t, owned) = self.message(pieces, lo, hi)?;
            let mut req: MPI_Request = unsafe { RSMPI_REQUEST_NULL };
            // SAFETY: (buf, cnt, t) describes memory that stays valid and untouched until
            // the matching Wait (the executor's contract); `req` is an out-pointer.
            let rc = unsafe {
                if send {
                    PMPI_Isend(
                        buf as *const c_void,
                        cnt,
                        t,
                        peer as c_int,
                        self.tag,
                        self.comm,
                        &mut req,
                    )
                } else {
                    PMPI_Irecv(
                        buf as *mut c_void,
                        cnt,
                        t,
                        peer as c_int,
                        self.tag,
                        self.comm,
                        &mut req,
                    )
                }
            };
            if owned {
                // SAFETY: freeing a committed type after posting is allowed; the pending
                // operation keeps its own reference.
                unsafe { PMPI_Type_free(&mut t) };
            }
            if rc != consts::SUCCESS() {
                // Already posted chunks of this message are completed before the error
                // goes up (the executor only knows whole messages).
                let posted = self.reqs.len() - start;
                if posted > 0 {
                    // SAFETY: requests posted above, waited once here.
                    unsafe {
                        PMPI_Waitall(
                            posted as c_int,
                            self.reqs[start..].as_mut_ptr(),
                            RSMPI_STATUSES_IGNORE,
                        )
                    };
                    self.reqs.truncate(start);
                }
                check(rc, if send { "MPI_Isend" } else { "MPI_Irecv" })?;
            }
            self.reqs.push(req);
            if send {
                self.stats_msgs += 1;
            }
            lo = hi;
            if lo >= n {
                break;
            }
        }
        Ok(Req {
            start: start as u32,
            len: (self.reqs.len() - start) as u32,
        })
    }

    fn scratch(&mut self, n: usize) -> Result<*mut u8, Error> {
        let need = self.f.span(n);
        if self
            .scratch
            .as_ref()
            .is_none_or(|s| s.mem.len() * 16 < need)
        {
            self.scratch = Some(Scratch::new(need)?);
        }
        Ok(self
            .scratch
            .as_mut()
            .unwrap()
            .ptr()
            .wrapping_offset(-self.f.true_lb))
    }

    /// Copy `n` elements between two element bases, touching only data bytes.
    fn copy_elems(&mut self, src: *const u8, dst: *mut u8, n: usize) -> Result<(), Error> {
        if n == 0 || std::ptr::eq(src, dst) {
            return Ok(());
        }
        if self.f.contiguous() {
            // SAFETY: both ranges hold n contiguous elements of `size` bytes inside buffers the
            // program validated; they may overlap only for in-place aliasing, hence `copy`.
            unsafe { std::ptr::copy(src, dst, n * self.f.size) };
            return Ok(());
        }
        // Non-contiguous: pack then unpack, which reads and writes data bytes only.
        let cnt = Self::count(n)?;
        // SAFETY: `src`/`dst` describe `cnt` elements of `dt` inside program-validated buffers.
        unsafe {
            pack::convert(
                src as *const c_void,
                cnt,
                self.dt,
                dst as *mut c_void,
                cnt,
                self.dt,
                self.comm,
            )
        }
    }
}

impl Transport for PmpiTransport<'_> {
    type Request = Req;

    fn alloc_tmp(&mut self, sizes: &[usize]) -> Result<(), Error> {
        for (s, _) in self.tmp.drain(..) {
            self.pool.give(s);
        }
        for &n in sizes {
            self.tmp.push((self.pool.take(self.f.span(n))?, n));
        }
        Ok(())
    }

    fn isend(&mut self, peer: usize, pieces: &[Piece]) -> Result<Req, Error> {
        self.post(true, peer, pieces)
    }

    fn irecv(&mut self, peer: usize, pieces: &[Piece]) -> Result<Req, Error> {
        self.post(false, peer, pieces)
    }

    fn wait(&mut self, mut r: Req) -> Result<(), Error> {
        if crate::nbc::running() {
            // A rank blocked here may hold a step of a schedule on another communicator that
            // a rank this call waits for is itself waiting for (MPI's progress rule): test,
            // and between tests advance the schedules (inside `PMPI_Waitall` they would not
            // move).
            let mut pause = crate::nbc::Pause::default();
            while !self.test(&mut r)? {
                crate::nbc::progress();
                pause.pause();
            }
            return Ok(());
        }
        let (s, n) = (r.start as usize, r.len as usize);
        let reqs = self
            .reqs
            .get_mut(s..s + n)
            .ok_or_else(|| Error::Internal("wait on an unknown request".into()))?;
        // SAFETY: the requests came from Isend/Irecv in `post` and are waited exactly once
        // (MPI sets them to MPI_REQUEST_NULL).
        let rc = unsafe {
            if n == 1 {
                PMPI_Wait(reqs.as_mut_ptr(), RSMPI_STATUS_IGNORE)
            } else {
                PMPI_Waitall(n as c_int, reqs.as_mut_ptr(), RSMPI_STATUSES_IGNORE)
            }
        };
        check(rc, "MPI_Wait")
    }

    fn test(&mut self, r: &mut Req) -> Result<bool, Error> {
        let (s, n) = (r.start as usize, r.len as usize);
        let reqs = self
            .reqs
            .get_mut(s..s + n)
            .ok_or_else(|| Error::Internal("test of an unknown request".into()))?;
        let mut flag: c_int = 0;
        // SAFETY: as for `wait`; Testall completes all of them or none (then nothing changes).
        let rc = unsafe {
            PMPI_Testall(
                n as c_int,
                reqs.as_mut_ptr(),
                &mut flag,
                RSMPI_STATUSES_IGNORE,
            )
        };
        check(rc, "MPI_Testall").map(|()| flag != 0)
    }

    fn reduce(&mut self, src: Piece, dst: Piece, src_first: bool) -> Result<(), Error> {
        let n = Self::count(src.len)?;
        if n == 0 {
            return Ok(());
        }
        let s = self.addr(&src)? as *const u8;
        let d = self.addr(&dst)?;
        if src_first || self.commutative {
            // SAFETY: MPI_Reduce_local computes inout := in ⊕ inout over n elements of dt,
            // both inside program-validated buffers.
            return check(
                unsafe {
                    PMPI_Reduce_local(s as *const c_void, d as *mut c_void, n, self.dt, self.op)
                },
                "MPI_Reduce_local",
            );
        }
        // dst := dst ⊕ src for a non-commutative op: t := src; t := dst ⊕ t; dst := t.
        let t = self.scratch(src.len)?;
        self.copy_elems(s, t, src.len)?;
        // SAFETY: as above, with the scratch buffer sized for n elements.
        check(
            unsafe { PMPI_Reduce_local(d as *const c_void, t as *mut c_void, n, self.dt, self.op) },
            "MPI_Reduce_local",
        )?;
        self.copy_elems(t, d, src.len)
    }

    fn copy(&mut self, src: Piece, dst: Piece) -> Result<(), Error> {
        let s = self.addr(&src)?;
        let d = self.addr(&dst)?;
        self.copy_elems(s, d, src.len)
    }

    /// A node step on this rank's node's window: a reduce with `shm`'s reduce protocol, the
    /// others with a plan of `pcoll::algo::shm::xfer`, in elements of the call's type (a
    /// reduction's datatype is the same on every rank).
    fn node(&mut self, members: &[usize], step: &NodeStep) -> Result<(), Error> {
        use pcoll::algo::shm::xfer::Kind;
        let w = self.node_win(members)?;
        let me = members.iter().position(|&q| q == self.rank).unwrap_or(0);
        let (kind, counts, displs, input, output) = match step {
            NodeStep::Reduce {
                root,
                input,
                output,
            } => {
                let i = self.addr(input)? as *const u8;
                let o = match output {
                    Some(o) => self.addr(o)?,
                    None => std::ptr::null_mut(),
                };
                crate::shm::run::run(w, &self.node_call(i, o, input.len, *root))?;
                crate::state::record_node_step(step, input.len * self.f.size);
                return Ok(());
            }
            NodeStep::Bcast { root, data } => {
                let d = self.addr(data)?;
                let kind = Kind::Bcast { root: *root };
                (kind, vec![data.len], vec![], d as *const u8, d)
            }
            NodeStep::ReduceScatter {
                counts,
                input,
                output,
            } => {
                let kind = Kind::ReduceScatter {
                    commutative: self.commutative,
                };
                let (i, o) = (self.addr(input)? as *const u8, self.addr(output)?);
                (kind, counts.clone(), vec![], i, o)
            }
            NodeStep::Allgatherv {
                counts,
                displs,
                data,
            } => {
                let d = self.addr(data)?;
                let own = self.addr(&data.sub(displs[me], displs[me]))? as *const u8;
                (Kind::Allgatherv, counts.clone(), displs.clone(), own, d)
            }
        };
        let cell_elems = crate::shm::run::cell_elems(w.cell, &self.f)
            .ok_or_else(|| Error::Unsupported("an element larger than a shm cell".into()))?;
        let plan = Plan {
            kind,
            p: members.len(),
            counts: &counts,
            displs: &displs,
            cell_elems,
            in_place: matches!(step, NodeStep::Allgatherv { .. }),
        };
        let n = counts.iter().sum();
        let mut call = self.node_call(input, output, n, 0);
        call.in_place = false;
        if !matches!(kind, Kind::ReduceScatter { .. }) {
            call.fused = None; // only moves
        }
        crate::shm::run::run_plan(Some(w), &call, &plan)?;
        crate::state::record_node_step(step, n * self.f.size);
        Ok(())
    }
}
