//! Serving a call with one of pcoll's algorithms: the program for (algorithm, call shape)
//! from the communicator's cache, the user's buffers as the program's `In` and `Out` (for
//! allgatherv, after converting or staging this rank's block), and the executor over
//! `PmpiTransport` on the shadow communicator, with messages split into chunks.

use super::call::Args;
use super::validate::Valid;
use crate::comm::{self, CommState};
use crate::consts;
use crate::mpi_types::TypeFacts;
use crate::pack;
use crate::pmpi::{Chunking, PmpiTransport, Scratch};
use crate::state::Global;
use pcoll::algo::hier::{build_hier, Ctx, NodeSteps};
use pcoll::algo::{build, Algorithm, CallSpec, Collective};
use pcoll::{exec, Error, Program};
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// The program's `In` and `Out` buffers.
pub(super) type Bases = (*const c_void, *mut c_void);

/// Run `alg` for the validated call `v`: its program, built or found in the communicator's
/// cache, is run and returned with the communicator's state (see [`run_program`]).
pub(super) fn run(
    g: &Global,
    a: &Args,
    v: &Valid,
    alg: Algorithm,
) -> Result<(&'static CommState, Arc<Program>), Error> {
    let st = comm::state(a.comm, v.spec.p, v.spec.rank)
        .map_err(|c| Error::Mpi(c, "communicator setup".into()))?;
    let spec = &v.spec;
    if spec.p > 1 {
        // Every rank runs a pcoll program in this call: ask for the nodes now (once per
        // communicator), so that later decisions can weigh the node-aware algorithms (the
        // nodes' windows for their node steps are made by the caller:
        // `resolve::node_windows_wait`).
        st.layout(g);
    }
    if spec.p == 1 && spec.coll.reduces() {
        // Alone, no MPI call sees the datatype: an uncommitted one is refused here with the
        // MPI's own class, as its collective would (c-tests/errors.c at p = 1).
        crate::shm::run::reducible(a.dt, a.op)?;
    }
    let prog = program(g, st, alg, spec, node_steps(st, v))?;
    run_program(g, a, v, st, &prog)?;
    Ok((st, prog))
}

/// The program of `alg` for `spec` on the communicator whose state is `st`: from its cache,
/// or built (node-aware ones over its nodes, which the caller has asked for, their node
/// steps as `node` says).
pub(super) fn program(
    g: &Global,
    st: &CommState,
    alg: Algorithm,
    spec: &pcoll::CallSpec,
    node: NodeSteps,
) -> Result<Arc<Program>, Error> {
    st.program(alg, spec, || {
        if spec.total() == 0 {
            return Ok(Program::new());
        }
        if alg.node_aware() {
            let ctx = Ctx {
                layout: st.layout(g),
                inter: g.table.model_net(),
                node,
            };
            return build_hier(alg, spec, &ctx);
        }
        build(alg, spec)
    })
}

/// How the node steps of `hier`/`hier_ml` run: through the nodes' windows from 4 KiB
/// (`PCOLL_HIER_SHM=auto`, the default), every one (`1`), or never (`0`); point-to-point
/// when a node's window was refused or an element of the call's type does not fit its cells
/// (the same answer on every rank of a node: a reduction's datatype is the same on every
/// rank, and the variable is agreed at `MPI_Init`).
fn node_steps(st: &CommState, v: &Valid) -> NodeSteps {
    let Some(mode) = crate::shm::node_mode() else {
        return NodeSteps::PointToPoint;
    };
    match st.known_node_shm() {
        Some(Ok(Some(w))) if crate::shm::run::cell_elems(w.cell, &v.facts).is_some() => mode,
        Some(Ok(None)) => mode, // a node of one rank: no node step
        _ => NodeSteps::PointToPoint,
    }
}

/// Serve a call with `shm` over the communicator's window (made by the decision); an element
/// larger than a cell (every rank has the same type) runs `binomial`.
pub(super) fn run_shm(g: &Global, a: &Args, v: &Valid) -> Result<(), Error> {
    let spec = &v.spec;
    if spec.coll.reduces() {
        // Every rank fails here alike rather than one owner mid-call.
        crate::shm::run::reducible(a.dt, a.op)?;
    }
    if !matches!(spec.coll, Collective::Reduce | Collective::Allreduce) {
        return run_shm_plan(g, a, v);
    }
    let call = shm_call(a, v);
    if spec.p == 1 {
        return crate::shm::run::alone(&call);
    }
    let st = comm::state(a.comm, spec.p, spec.rank)
        .map_err(|c| Error::Mpi(c, "communicator setup".into()))?;
    let w = window(g, st)?;
    if crate::shm::run::cell_elems(w.cell, &v.facts).is_none() {
        return run(g, a, v, Algorithm::Binomial).map(|_| ());
    }
    crate::shm::run::run(w, &call)
}

/// The reduce or allreduce call `shm` runs (blocking or not).
pub(super) fn shm_call(a: &Args, v: &Valid) -> crate::shm::run::Call {
    let spec = &v.spec;
    crate::shm::run::Call {
        input: if v.in_place {
            a.recvbuf as *const u8
        } else {
            a.sendbuf as *const u8
        },
        output: a.recvbuf as *mut u8,
        count: spec.total(),
        dt: a.dt,
        op: a.op,
        facts: v.facts,
        commutative: spec.commutative,
        root: spec.root,
        all: spec.coll == Collective::Allreduce,
        in_place: v.in_place,
        fused: if v.facts.contiguous() {
            crate::shm::kernel::fused(a.op, a.dt)
        } else {
            None
        },
    }
}

/// The communicator's shared window (p > 1). Every rank is here: ask for the nodes now (once
/// per communicator), as `run` does, so that the decision is settled and the call may be
/// served again (`dispatch::again`).
fn window<'a>(g: &Global, st: &'a CommState) -> Result<&'a crate::shm::Win, Error> {
    st.layout(g);
    st.shm()
        .ok_or_else(|| Error::Internal("shm chosen without a window".into()))
}

/// Bcast, allgather(v), reduce_scatter(_block) with `shm`: the plan of
/// `pcoll::algo::shm::xfer` over the window. Bcast and allgather(v) run in bytes (types
/// with holes staged in a packed buffer, as for the other algorithms; a total above an int
/// count goes to the MPI before); an element larger than a cell runs `binomial`.
fn run_shm_plan(g: &Global, a: &Args, v: &Valid) -> Result<(), Error> {
    use pcoll::algo::shm::xfer::Plan;
    let spec = &v.spec;
    let st = comm::state(a.comm, spec.p, spec.rank)
        .map_err(|c| Error::Mpi(c, "communicator setup".into()))?;
    let w = if spec.p > 1 {
        Some(window(g, st)?)
    } else {
        None
    };
    let cell = w.map_or(usize::MAX, |w| w.cell);
    let Some(cell_elems) = crate::shm::run::cell_elems(cell, &v.facts) else {
        return run(g, a, v, Algorithm::Binomial).map(|_| ());
    };
    let plan = Plan {
        kind: plan_kind(spec),
        p: spec.p,
        counts: &spec.counts,
        displs: &spec.displs,
        cell_elems,
        in_place: v.in_place,
    };
    let go = |bases: Bases| crate::shm::run::run_plan(w, &plan_call(a, v, bases), &plan);
    if v.bytes != Some(true) {
        return go(plan_bases(a, v, st)?);
    }
    // A type with holes: the data meet in a packed staging buffer.
    if spec.coll == Collective::Bcast {
        let mut buf = stage_bcast(a, v, st)?;
        let base = buf.ptr() as *mut c_void;
        let out = go((base as *const c_void, base)).and_then(|()| unstage_bcast(a, v, st, &buf));
        st.pool.give(buf);
        return out;
    }
    let (buf, bases) = stage(a, v, st)?;
    let out = go(bases).and_then(|()| unstage(a, v, st, &buf));
    st.pool.give(buf);
    out
}

/// The `shm` plan's kind of a bcast, allgather(v) or reduce_scatter(_block).
pub(super) fn plan_kind(spec: &CallSpec) -> pcoll::algo::shm::xfer::Kind {
    use pcoll::algo::shm::xfer::Kind;
    match spec.coll.base() {
        Collective::Bcast => Kind::Bcast { root: spec.root },
        Collective::Allgatherv => Kind::Allgatherv,
        _ => Kind::ReduceScatter {
            commutative: spec.commutative,
        },
    }
}

/// The window call of a bcast, allgather(v) or reduce_scatter(_block) plan over `bases`
/// (bcast and allgather(v) in bytes).
pub(super) fn plan_call(a: &Args, v: &Valid, (input, output): Bases) -> crate::shm::run::Call {
    let spec = &v.spec;
    let moves = !spec.coll.reduces();
    crate::shm::run::Call {
        input: input as *const u8,
        output: output as *mut u8,
        count: spec.total(),
        dt: if moves { consts::dt_byte() } else { a.dt },
        op: a.op,
        facts: v.facts,
        commutative: spec.commutative,
        root: spec.root,
        all: false,
        in_place: v.in_place,
        fused: if moves || !v.facts.contiguous() {
            None
        } else {
            crate::shm::kernel::fused(a.op, a.dt)
        },
    }
}

/// The bases of a plan whose data need no staging (`v.bytes != Some(true)`).
pub(super) fn plan_bases(a: &Args, v: &Valid, st: &CommState) -> Result<Bases, Error> {
    Ok(match v.spec.coll.base() {
        Collective::Bcast => (a.recvbuf as *const c_void, a.recvbuf),
        Collective::Allgatherv => bases(a, v, st)?,
        _ => (
            if v.in_place {
                a.recvbuf as *const c_void
            } else {
                a.sendbuf
            },
            a.recvbuf,
        ),
    })
}

/// Run `prog` (built for `v` on the communicator whose state is `st`) with the call's buffers.
pub(super) fn run_program(
    g: &Global,
    a: &Args,
    v: &Valid,
    st: &CommState,
    prog: &Program,
) -> Result<(), Error> {
    let spec = &v.spec;
    // Allgather(v) or bcast with a type with holes: the data meet in a packed staging buffer.
    if spec.coll == Collective::Bcast && v.bytes == Some(true) {
        let mut buf = stage_bcast(a, v, st)?;
        let base = buf.ptr() as *mut c_void;
        let out = execute(g, a, v, st, prog, (base as *const c_void, base))
            .and_then(|()| unstage_bcast(a, v, st, &buf));
        st.pool.give(buf);
        out?;
    } else if spec.coll.base() == Collective::Allgatherv && v.bytes == Some(true) {
        let (buf, bases) = stage(a, v, st)?;
        let out = execute(g, a, v, st, prog, bases).and_then(|()| unstage(a, v, st, &buf));
        st.pool.give(buf);
        out?;
    } else {
        let bases = bases(a, v, st)?;
        execute(g, a, v, st, prog, bases)?;
    }
    Ok(())
}

/// Execute `prog` over `PmpiTransport` with `bases` as `In` and `Out`.
fn execute(
    g: &Global,
    a: &Args,
    v: &Valid,
    st: &CommState,
    prog: &Program,
    bases: Bases,
) -> Result<(), Error> {
    exec::run(prog, &mut transport(g, a, v, st, bases))
}

/// The transport of the call `v` with `bases` as `In` and `Out` (blocking and non-blocking
/// calls alike).
pub(super) fn transport<'a>(
    g: &Global,
    a: &Args,
    v: &Valid,
    st: &'a CommState,
    (in_base, out_base): Bases,
) -> PmpiTransport<'a> {
    let dt = if v.bytes.is_some() {
        consts::dt_byte()
    } else {
        a.dt
    };
    PmpiTransport::new(
        &st.pool,
        st.shadow(),
        dt,
        a.op,
        v.facts,
        v.spec.commutative,
        in_base,
        out_base,
        chunking(g, v.spec.coll, &v.facts, st),
        v.spec.rank,
    )
    .with_node(st.known_node_shm().and_then(|w| w.ok().flatten()))
}

/// The user's buffers as `In` and `Out` (allgatherv: `In` is this rank's block, converted
/// into the receive buffer first if the send type differs).
pub(super) fn bases(a: &Args, v: &Valid, st: &CommState) -> Result<Bases, Error> {
    let spec = &v.spec;
    if spec.coll.base() != Collective::Allgatherv {
        let input = if v.in_place {
            a.recvbuf as *const c_void
        } else {
            a.sendbuf
        };
        return Ok((input, a.recvbuf));
    }
    let own = (a.recvbuf as *mut u8)
        .wrapping_offset(spec.displs[spec.rank] as isize * v.facts.extent)
        as *mut c_void;
    if v.in_place {
        Ok((own as *const c_void, a.recvbuf))
    } else if a.sendtype != a.dt {
        // Different (but matching) type signatures: convert our block into the receive
        // buffer's layout once, then serve the call as in-place.
        // SAFETY: validated arguments: the send buffer holds `sendcount` elements of
        // `sendtype`, our receive block `counts[rank]` elements of the receive type.
        unsafe {
            pack::convert(
                a.sendbuf,
                a.sendcount as c_int,
                a.sendtype,
                own,
                a.counts[spec.rank] as c_int,
                a.dt,
                st.shadow(),
            )?
        };
        Ok((own as *const c_void, a.recvbuf))
    } else {
        Ok((a.sendbuf, a.recvbuf))
    }
}

/// Allgatherv staged: a packed buffer of every block (byte displacements of `v.spec`) with
/// this rank's block packed into its place; the bases are (own block, buffer).
pub(super) fn stage(a: &Args, v: &Valid, st: &CommState) -> Result<(Scratch, Bases), Error> {
    let spec = &v.spec;
    let mut buf = st.pool.take(spec.total())?;
    let base = buf.ptr();
    let own = base.wrapping_add(spec.displs[spec.rank]) as *mut c_void;
    let (src, n, t) = if v.in_place {
        let at = (a.recvbuf as *mut u8)
            .wrapping_offset(a.displs[spec.rank] as isize * v.user.extent)
            as *const c_void;
        (at, a.counts[spec.rank], a.dt)
    } else {
        (a.sendbuf, a.sendcount, a.sendtype)
    };
    let bytes = spec.counts[spec.rank] as c_int;
    // SAFETY: `src` holds `n` elements of `t` (validated arguments); `own` has `bytes` bytes
    // inside the staging buffer, the packed size of the block (its signature's size).
    unsafe { pack::pack(src, n as c_int, t, own, bytes, st.shadow())? };
    Ok((buf, (own as *const c_void, base as *mut c_void)))
}

/// Unpack every block of the staging buffer into the user's receive buffer.
pub(super) fn unstage(a: &Args, v: &Valid, st: &CommState, buf: &Scratch) -> Result<(), Error> {
    let spec = &v.spec;
    for j in 0..spec.p {
        let from = buf.ptr_const().wrapping_add(spec.displs[j]);
        let to = (a.recvbuf as *mut u8).wrapping_offset(a.displs[j] as isize * v.user.extent)
            as *mut c_void;
        // SAFETY: `from` holds the block's packed bytes; `to` the user's receive block.
        unsafe {
            pack::unpack(
                from as *const c_void,
                spec.counts[j] as c_int,
                to,
                a.counts[j] as c_int,
                a.dt,
                st.shadow(),
            )?
        };
    }
    Ok(())
}

/// Bcast staged: a packed buffer of the data, packed from the user's buffer at the root.
pub(super) fn stage_bcast(a: &Args, v: &Valid, st: &CommState) -> Result<Scratch, Error> {
    let spec = &v.spec;
    let mut buf = st.pool.take(spec.total())?;
    if spec.rank == spec.root {
        // SAFETY: the root's buffer holds `count` elements of `dt` (validated); the staging
        // buffer has their packed size.
        unsafe {
            pack::pack(
                a.recvbuf,
                a.counts[0] as c_int,
                a.dt,
                buf.ptr() as *mut c_void,
                spec.total() as c_int,
                st.shadow(),
            )?
        };
    }
    Ok(buf)
}

/// Unpack the broadcast data into the user's buffer (every rank but the root).
pub(super) fn unstage_bcast(
    a: &Args,
    v: &Valid,
    st: &CommState,
    buf: &Scratch,
) -> Result<(), Error> {
    let spec = &v.spec;
    if spec.rank == spec.root {
        return Ok(());
    }
    // SAFETY: `buf` holds the packed bytes; the user's buffer `count` elements of `dt`.
    unsafe {
        pack::unpack(
            buf.ptr_const() as *const c_void,
            spec.total() as c_int,
            a.recvbuf,
            a.counts[0] as c_int,
            a.dt,
            st.shadow(),
        )
    }
}

// Chunk bytes and the largest chunked message when the environment does not say: the
// running MPI's ([`pcoll::mpi::Mpi::chunk_defaults`]).
// The collectives that only move data (bcast, allgather, allgatherv) chunk only messages of
// up to [`COPY_CHUNKS`] chunks by default between ranks of one node: one just above the
// eager limit gains (Open MPI p = 2, forced ring allgatherv of 8 KiB, i.e. 4 KiB blocks:
// 0.87x native chunked, 1.27x whole; 16 KiB 1.11x against 1.26x), one of many chunks loses
// to a single rendezvous through shared memory (32 KiB 1.39-1.42x against 1.19-1.24x,
// 256 KiB 2.6x against 1.1x; MPICH alike). Between nodes they chunk up to the largest
// chunked message as the reductions do everywhere: on the emulated cluster (MPICH, 4 nodes,
// 500 Mbit/s TCP) the default bcast measured 0.54-0.66x native at 256 KiB-4 MiB chunked,
// 0.70-0.84x whole.

/// Most chunks of a default-chunked message of bcast, allgather and allgatherv.
const COPY_CHUNKS: usize = 4;

/// How this call's messages are split (`PmpiTransport::post`). Every rank must split a
/// message at the same bytes: reductions pass the same datatype everywhere (the standard
/// says so), allgatherv runs in bytes (see [`in_bytes`](super::validate::in_bytes)), and the
/// nodes are the same on every rank.
fn chunking<'a>(g: &Global, coll: Collective, f: &TypeFacts, st: &'a CommState) -> Chunking<'a> {
    let dflt = g.mpi.chunk_defaults();
    let chunk = g.cfg.chunk.unwrap_or(dflt.0);
    let max_bytes = g.cfg.chunk_max.unwrap_or(dflt.1);
    let size = f.size;
    if chunk == 0 || size == 0 || size > chunk {
        return Default::default();
    }
    let local = match (g.cfg.chunk_max, coll.reduces(), st.known_layout()) {
        (None, false, Some(l)) => Some((COPY_CHUNKS * chunk, &l.node_of[..])),
        // Nodes not asked (not reached: `run` asks them first): every peer counts as local.
        (None, false, None) => Some((COPY_CHUNKS * chunk, &[][..])),
        _ => None,
    };
    Chunking {
        elems: chunk / size,
        max_bytes,
        local,
    }
}
