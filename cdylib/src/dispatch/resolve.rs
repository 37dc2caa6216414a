//! The glue to the resolver (`pcoll::decide::Resolver`, the one place every decision is
//! made): the facts of a call as it wants them, the decision (publishing the native gate's
//! cells for a communicator size on first use), and the choice of the full path with its
//! reason and the fallback warning.

use super::call::Args;
use crate::consts;
use crate::mpi_types;
use crate::state::{self, Global};
use mpi_sys::*;
use pcoll::algo::{Algorithm, CallSpec, Collective};
use pcoll::decide::{CallFacts, Decision, NativeFacts};
use pcoll::learn::Candidate;
use pcoll::nodes::NodeShape;
use pcoll::Error;
use std::os::raw::c_int;

/// The defect facts of a call, asked of the MPI only when a defect rule needs them.
pub(super) struct ArgFacts<'a> {
    pub dt: MPI_Datatype,
    /// The call's op (`MPI_OP_NULL` for the collectives that do not reduce).
    pub op: MPI_Op,
    pub unequal: &'a dyn Fn() -> bool,
    /// [`NativeFacts::displaced`].
    pub displaced: bool,
}

impl<'a> ArgFacts<'a> {
    /// The facts of a call the full path holds (`unequal`: its counts' test).
    pub fn of(a: &Args, unequal: &'a dyn Fn() -> bool) -> ArgFacts<'a> {
        ArgFacts {
            dt: a.dt,
            op: a.op,
            unequal,
            displaced: a.displaced(),
        }
    }
}

impl NativeFacts for ArgFacts<'_> {
    fn holes(&self) -> bool {
        mpi_types::type_facts(self.dt).is_ok_and(|f| !f.contiguous())
    }
    fn true_lb(&self) -> i64 {
        mpi_types::true_lb(self.dt).map_or(0, |lb| lb as i64)
    }
    fn unequal_counts(&self) -> bool {
        (self.unequal)()
    }
    fn user_op(&self) -> bool {
        self.op != consts::op_null() && !mpi_types::op_is_predefined(self.op)
    }
    fn displaced(&self) -> bool {
        self.displaced
    }
}

/// The resolver's decision for a call (publishing the gate's cell for its collective and `p`
/// on first use), with `PCOLL_LEARN`'s pick for it if the learner decides the call.
pub(super) fn decide(
    g: &'static Global,
    call: &CallFacts,
    nf: &dyn NativeFacts,
    learned: Option<Candidate>,
) -> Result<Decision, Error> {
    crate::gate::ensure(g, call.coll, call.p);
    state::resolver(g, call.coll, call.p)
        .with_learned(learned)
        .resolve(call, nf)
}

/// What the full path runs: the algorithm, why (for the debug log and warnings), and, for a
/// call that explores its cell (a race, `PCOLL_LEARN`), its clock (such a call is kept to be
/// served again only with its cell, whose next call may run another candidate: `kept`).
pub(super) struct Chosen {
    pub alg: Algorithm,
    pub why: String,
    pub explore: Option<crate::learn::Explore>,
    /// A decided raced (or learned) cell's count of its winner's calls, for the served-again
    /// path that may run the next ones.
    pub tally: Option<crate::learn::Tally>,
    /// The call's cell, if the served-again path may step its next calls (exploring or not:
    /// `crate::learn::step_kept`).
    pub kept: Option<pcoll::learn::CellKey>,
    /// The call asked for `shm` and runs without it while the communicator's window waits
    /// ([`window_waits`]): what it added to the wait. Its repeats are forwarded without the
    /// full path and counted in the wait ([`Wait::memo`], [`Wait::memo_nb`], `again::again`);
    /// the one that makes the window takes the full path.
    pub waits: Option<Wait>,
    /// The user forced the algorithm (`pcoll_force`, `PCOLL_<COLL>`): windows it needs are
    /// made at once ([`node_windows_wait`]).
    pub forced: bool,
}

/// A call counted in its communicator's wait for the window ([`window_waits`]): its rent and
/// the window's predicted cost (`crate::comm::CommState::window_now`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Wait {
    pub rent: f64,
    pub cost: f64,
    /// The gate memo's generation when the call was decided ([`Wait::memo`]).
    pub gen: std::os::raw::c_uint,
}

impl Wait {
    /// Count the call in the wait of the communicator of `st`: true if the window is to be
    /// made now (asked again with the same rent, the answer is the same and nothing is
    /// counted twice: `pcoll::model::shm::WindowWait::ask`).
    pub fn window_now(&self, st: &crate::comm::CommState, after: u32) -> bool {
        st.window_now(self.rent, self.cost, after)
    }

    /// The call `a` ran native without the window (counted by [`Wait::window_now`]): its
    /// repeats are forwarded from C by the gate's memo (unless it was cleared since
    /// `self.gen`), counted in the wait, up to the one that makes the window. A waiting call
    /// on the Rust path cost ~0.3-0.5 us more than native even when served again (Open MPI
    /// 4.1, p = 2, 8 KiB reduce: 1.15-1.19x in verify/ab.c; ~1000 instructions).
    pub fn memo(&self, a: &Args, st: &crate::comm::CommState) {
        if a.large_count {
            return; // the gate forwards int counts only
        }
        let line = crate::gate::memo_line(a.coll, a.root);
        st.wait_memo(line, (self.rent, self.cost, crate::shm::after()), |count| {
            crate::gate::keep_native(a, self.gen, count)
        });
    }

    /// [`Wait::memo`] for a non-blocking call (of `bytes`, decided in served-again generation
    /// `gen`): its repeats go native from their entry (`crate::nbc::waiting`).
    pub fn memo_nb(&self, a: &Args, bytes: usize, gen: u64) {
        let Some(st) = crate::comm::existing(a.comm) else {
            return;
        };
        let slot = crate::gate::MEMO_LINES + a.coll.index();
        st.wait_memo(slot, (self.rent, self.cost, crate::shm::after()), |count| {
            crate::nbc::waiting::keep(a, bytes, gen, Some(count))
        });
    }
}

/// The facts of a call every rank shares, from its arguments (`None`: an op the MPI rejects;
/// the full path reports it).
pub(super) fn call_facts(a: &Args, p: usize, bytes: usize) -> Option<CallFacts> {
    let commutative = if a.coll.reduces() {
        mpi_types::op_commutative(a.op).ok()?
    } else {
        true
    };
    Some(CallFacts {
        coll: a.coll,
        p,
        bytes,
        commutative,
        in_place: a.in_place(),
        root: if a.coll == Collective::Reduce {
            a.root.max(0) as usize
        } else {
            0
        },
        nodes: Default::default(),
        shm_refused: false,
        node_shm: true,
        nonblocking: false,
    })
}

/// The facts of a validated call, nodes not asked, `shm` not known to fail.
fn spec_facts(a: &Args, spec: &CallSpec) -> CallFacts {
    CallFacts {
        coll: spec.coll,
        p: spec.p,
        bytes: spec.bytes(),
        commutative: spec.commutative,
        in_place: a.in_place(),
        root: spec.root,
        nodes: NodeShape::default(),
        shm_refused: false,
        node_shm: true,
        nonblocking: false,
    }
}

/// Which algorithm runs, and why (for the debug log and warnings): the resolver with this
/// process's overrides and, for a call the learner decides, its pick (`crate::learn::step`:
/// counted in its cell, every rank alike); a forced algorithm that cannot serve the call
/// warns once under `PCOLL_FALLBACK=warn` (a table rule's fallback is only logged at debug
/// level).
pub(super) fn choose(g: &'static Global, a: &Args, spec: &mut CallSpec) -> Result<Chosen, c_int> {
    let mut call = spec_facts(a, spec);
    let unequal = || a.unequal_counts();
    let nf = ArgFacts::of(a, &unequal);
    if let Some(s) = crate::learn::step(g, a.comm, spec.rank, &mut call, &nf) {
        let d = decided(g, &call, &nf, Some(s.cand))?;
        // Kept for the served-again path only if it runs the candidate.
        let kept = s
            .kept
            .filter(|_| d.algorithm == s.cand.alg && d.fallback.is_none());
        return Ok(Chosen {
            tally: s.tally,
            kept,
            ..chosen(g, spec, &call, d, s.explore)
        });
    }
    let mut d = decided(g, &call, &nf, None)?;
    // The nodes only refine a decision that is not native without them: a rank can get here
    // while others went native through the gate or the fast path (which decide without
    // nodes), and must then go native too. A non-native decision sends every rank here.
    if d.algorithm != Algorithm::Native {
        let nodes = node_shape(g, a, spec);
        if nodes != NodeShape::default() {
            call.nodes = nodes;
            call.node_shm = node_shm(a, spec);
            d = decided(g, &call, &nf, None)?;
        }
    }
    // A communicator's first calls that ask for `shm` may run without it while its window
    // waits (the same calls on every rank): native where the cell races `shm` against native
    // (a raced rule's; it races once the window is made) and no native defect fires, else the
    // model's pick without `shm`.
    if d.algorithm == Algorithm::Shm && !d.source.forced() {
        let mut alt = call;
        alt.shm_refused = true;
        let waiting = || {
            if crate::learn::races(g, &call, &nf) {
                Ok(Decision {
                    algorithm: Algorithm::Native,
                    by_model: false,
                    segment: 0,
                    ..d.clone()
                })
            } else {
                decided(g, &alt, &nf, None)
            }
        };
        if let Some((c, wait)) = window_waits(g, a, spec, &call, waiting)? {
            let mut c = chosen(g, spec, &alt, c, None);
            if !c.why.is_empty() {
                // Read in the debug log: the window is not refused, it waits.
                c.why = format!(
                    "shm's window waits (PCOLL_SHM_AFTER, docs/shm.md); {}",
                    c.why
                );
            }
            return Ok(Chosen {
                waits: Some(wait),
                ..c
            });
        }
    }
    // `shm` needs the communicator's window: made now if this is the first call asking (every
    // rank asks alike), and if refused the decision falls back as for any ineligible one.
    if d.algorithm == Algorithm::Shm && shm_refused(g, a, spec) {
        call.shm_refused = true;
        d = decided(g, &call, &nf, None)?;
    }
    Ok(chosen(g, spec, &call, d, None))
}

/// [`choose`] for a non-blocking or persistent call, whose initiation should not wait for the
/// other ranks: the nodes count only if known without communication (read from the world's
/// when the communicator's state was made, `crate::nodes::from_world`), a cell `PCOLL_LEARN` has decided
/// counts, one it still explores is decided as without learning (its clock times blocking
/// calls only; every rank skips it alike), and the nodes' windows count as refused (a node
/// step blocks). `shm` counts where `shm_ok` (a reduce or allreduce whose element fits a
/// cell: `Op` advances it without blocking) once the communicator's window is made: a
/// non-blocking call never makes it, but wants it (counted as a blocking call asking for it
/// is, `CommState::window_now`), and the communicator's next blocking collective makes it
/// (docs/nonblocking.md).
pub(super) fn choose_nb(
    g: &'static Global,
    a: &Args,
    spec: &mut CallSpec,
    shm_ok: bool,
) -> Result<Chosen, c_int> {
    let mut call = CallFacts {
        shm_refused: !shm_ok,
        node_shm: false, // node steps never run in a schedule advanced step by step
        nonblocking: true,
        ..spec_facts(a, spec)
    };
    let unequal = || a.unequal_counts();
    let nf = ArgFacts::of(a, &unequal);
    let learned = match crate::learn::verdict(g, a.comm, &call) {
        crate::learn::Verdict::Settled(c, _) => Some(c),
        _ => None,
    };
    // A program that makes no blocking collective on the communicator keeps a wanted window
    // unmade: decide once, without `shm`, as the fallback below would (refusing `shm` changes
    // only a decision that takes it). Two decisions cost 0.5 us of a forwarded 4 KiB `MPI_Ireduce` (Intel MPI).
    if window_awaited(a, spec.p) {
        call.shm_refused = true;
    }
    let mut d = decided(g, &call, &nf, learned)?;
    // The nodes (if known) only refine a decision that is not native without them, as in
    // `choose`: the native gate's non-blocking cells (`crate::gate::nb_native`, asked only
    // while none of pcoll's schedules runs, so on some ranks and not others) are decided
    // without them, and must agree with this path on every call they send to native.
    if d.algorithm != Algorithm::Native {
        if let Some(nodes) = known_nodes(a, spec.p).filter(|n| *n != NodeShape::default()) {
            call.nodes = nodes;
            d = decided(g, &call, &nf, learned)?;
        }
    }
    // Only a window made already (by a blocking call deciding `shm`, or at the next blocking
    // collective after a non-blocking call wanted it): making one is collective and blocks,
    // which a non-blocking initiation must not. Whether it is made is agreed (made in the same call on every
    // rank); without it the decision falls back.
    let mut waits = None;
    if d.algorithm == Algorithm::Shm {
        if let Some(wanted) = shm_not_made(a, spec) {
            let (asked, forced) = (call, d.source.forced());
            call.shm_refused = true;
            d = decided(g, &call, &nf, learned)?;
            // The window is wanted (the next blocking collective makes it) once this call is the
            // one that would make it were it blocking (`window_waits`); forced: at once.
            if let Some(st) = wanted {
                let after = if forced { 1 } else { crate::shm::after() };
                let wait = Wait {
                    rent: state::resolver(g, spec.coll, spec.p).shm_rent(&asked, d.algorithm),
                    cost: crate::shm::window_cost(spec.p),
                    gen: 0, // not the gate's memo (`Wait::memo_nb`)
                };
                if wait.window_now(st, after) {
                    st.want_shm(a.comm);
                } else {
                    // Not kept: the next such call must be counted too.
                    waits = Some(wait);
                }
            }
        }
    }
    // A forced `shm` the call's form cannot run falls back by design (the blocking forms still
    // run it): no warning.
    if !shm_ok
        && d.fallback
            .as_ref()
            .is_some_and(|f| f.asked == Algorithm::Shm)
    {
        d.warn = false;
    }
    Ok(Chosen {
        waits,
        ..chosen(g, spec, &call, d, None)
    })
}

/// The communicator of `a` (of `p` ranks) has a window a non-blocking call wanted, which its
/// next blocking collective makes ([`crate::comm::CommState::shm_awaited`]).
pub(super) fn window_awaited(a: &Args, p: usize) -> bool {
    p > 1 && crate::comm::existing(a.comm).is_some_and(|st| st.shm_awaited())
}

/// A native decision for `a` (on `p` ranks) stands until the window is made, or for good:
/// the window is awaited, refused (on every rank alike) or `shm` is off (`PCOLL_SHM=0`,
/// agreed at `MPI_Init`). One look-up of the communicator's state.
pub(super) fn native_stands(a: &Args, p: usize) -> bool {
    !crate::shm::enabled()
        || (p > 1
            && crate::comm::existing(a.comm).is_some_and(|st| st.shm_awaited() || st.shm_refused()))
}

/// The decision as [`Chosen`]: its reason (formatted only when read), the fallback warning,
/// the segment in the call's elements.
fn chosen(
    g: &'static Global,
    spec: &mut CallSpec,
    call: &CallFacts,
    d: Decision,
    explore: Option<crate::learn::Explore>,
) -> Chosen {
    // The reason is only formatted when somebody reads it (a warning, the debug log).
    let why = if d.warn || log::log_enabled!(log::Level::Debug) {
        d.reason(call, &g.table)
    } else {
        String::new()
    };
    if d.warn {
        warn_once(
            spec.coll,
            d.fallback.as_ref().map_or(d.algorithm, |f| f.asked),
            &why,
        );
    }
    spec.seg_elems = d.seg_elems(spec.elem_bytes);
    Chosen {
        alg: d.algorithm,
        forced: d.source.forced(),
        why,
        explore,
        tally: None,
        kept: None,
        waits: None,
    }
}

/// [`decide`], its error as the code to raise (every rank gets the same).
fn decided(
    g: &'static Global,
    call: &CallFacts,
    nf: &dyn NativeFacts,
    learned: Option<Candidate>,
) -> Result<Decision, c_int> {
    decide(g, call, nf, learned).map_err(|e| {
        log::error!("{e}");
        if call.commutative {
            consts::ERR_ARG()
        } else {
            consts::ERR_OP()
        }
    })
}

/// The nodes of the call's communicator as far as the decision may read them. A request
/// for `hier` / `hier_ml` asks MPI (collective: such a request never goes native, so every
/// rank is here in this call, as for the state any pcoll algorithm needs). Otherwise only
/// a layout known without communication counts ([`known_nodes`], on every rank alike): a rank
/// must not start a collective step that other ranks, sent to native by the C gate, never take.
fn node_shape(g: &'static Global, a: &Args, spec: &CallSpec) -> NodeShape {
    if spec.p <= 1 {
        return NodeShape::default();
    }
    let facts = CallFacts {
        commutative: spec.commutative,
        root: spec.root,
        ..CallFacts::new(spec.coll, spec.p, spec.bytes())
    };
    let (pick, _, _) = state::resolver(g, spec.coll, spec.p).request(&facts);
    if matches!(pick, pcoll::Pick::Alg(alg) if alg.node_aware()) {
        return match crate::comm::state(a.comm, spec.p, spec.rank) {
            Ok(st) => st.layout(g).shape(),
            Err(_) => NodeShape::default(),
        };
    }
    known_nodes(a, spec.p).unwrap_or_default()
}

/// The communicator's nodes as known without communication: its state's, or, before pcoll
/// made one, read from the world's (the same on every rank).
fn known_nodes(a: &Args, p: usize) -> Option<NodeShape> {
    match crate::comm::existing(a.comm) {
        Some(st) => st.known_layout().map(|l| l.shape()),
        None => crate::nodes::from_world(a.comm, p).map(|l| l.shape()),
    }
}

/// The nodes may run `hier`'s node steps through shared windows: `shm` and
/// `PCOLL_HIER_SHM` are on and the windows were not refused (they are made by the first node-aware call; no MPI call here).
fn node_shm(a: &Args, spec: &CallSpec) -> bool {
    crate::shm::node_mode().is_some()
        && crate::comm::existing(a.comm)
            .and_then(|st| st.known_node_shm())
            .is_none_or(|w| w.is_ok())
        && spec.p > 1
}

/// A blocking call decided `shm` (not forced by the user) on a one-node communicator whose
/// window is not made yet: its decision without `shm` (`alt`) and what it added to the wait
/// if the window waits (`CommState::window_now`: `PCOLL_SHM_AFTER` calls, or their predicted
/// extra cost reaching the window's), else None (the window is made by the caller now). Asks
/// for the nodes (collective: every rank decided `shm`); `alt` is decided only while the
/// window waits.
fn window_waits(
    g: &'static Global,
    a: &Args,
    spec: &CallSpec,
    call: &CallFacts,
    alt: impl FnOnce() -> Result<Decision, c_int>,
) -> Result<Option<(Decision, Wait)>, c_int> {
    // Nothing waits without `shm` or with PCOLL_SHM_AFTER=1 (no communicator state made here).
    let after = crate::shm::after();
    if spec.p <= 1 || after <= 1 || !crate::shm::enabled() {
        return Ok(None);
    }
    let Ok(st) = crate::comm::state(a.comm, spec.p, spec.rank) else {
        return Ok(None);
    };
    if !crate::shm::may_wait(st) || st.layout(g).shape().nodes > 1 {
        return Ok(None);
    }
    let gen = crate::gate::memo_gen();
    let alt = alt()?;
    let wait = Wait {
        rent: state::resolver(g, spec.coll, spec.p).shm_rent(call, alt.algorithm),
        cost: crate::shm::window_cost(spec.p),
        gen,
    };
    Ok((!wait.window_now(st, after)).then_some((alt, wait)))
}

/// A node-aware call (every rank runs it: the decision is agreed) on a communicator whose
/// nodes' windows for `hier`'s node steps are not asked for yet: true while they wait (the
/// call runs its node steps point-to-point and is not kept to be served again), else false,
/// the windows made now where due. A call none of whose node steps would use them (below
/// 4 KiB, `hier`'s allgatherv: `Resolver::node_shm_rent` is 0) neither waits nor makes them.
/// As `shm`'s window ([`window_waits`]): made at the `PCOLL_SHM_AFTER`-th such call, or once
/// their predicted extra cost reaches the windows' (a node's, `crate::shm::window_cost`); at
/// once for a forced or explored call, or with `PCOLL_HIER_SHM=1` (every step through them).
pub(super) fn node_windows_wait(
    g: &'static Global,
    a: &Args,
    spec: &CallSpec,
    alg: Algorithm,
    at_once: bool,
) -> bool {
    if spec.p <= 1 || !alg.node_aware() {
        return false;
    }
    let Some(mode) = crate::shm::node_mode() else {
        return false;
    };
    let Ok(st) = crate::comm::state(a.comm, spec.p, spec.rank) else {
        return false;
    };
    if st.known_node_shm().is_some() {
        return false;
    }
    let nodes = st.layout(g).shape();
    if !at_once && mode != pcoll::algo::hier::NodeSteps::ShmAlways {
        let call = CallFacts {
            nodes,
            ..spec_facts(a, spec)
        };
        let rent = state::resolver(g, spec.coll, spec.p).node_shm_rent(&call, alg);
        if rent <= 0.0 {
            return false;
        }
        let cost = crate::shm::window_cost(nodes.max_ppn);
        if !st.node_windows_now(rent, cost, crate::shm::after()) {
            return true;
        }
    }
    let _ = st.node_shm(g);
    false
}

/// `shm` is turned off, or the communicator has no shared window for it (made here on first
/// use: collective; one rank needs none).
/// `shm` cannot serve the call: turned off, or the communicator spans several of pcoll's nodes
/// (asked now: the MPI's shared split alone may span them, as MPICH's does across the emulated
/// cluster's namespaces), or its window is refused (made now). Collective on first use, so
/// called only where every rank decided `shm` (the decision is agreed).
fn shm_refused(g: &'static Global, a: &Args, spec: &CallSpec) -> bool {
    if !crate::shm::enabled() {
        return true;
    }
    spec.p > 1
        && crate::comm::state(a.comm, spec.p, spec.rank).map_or(true, |st| {
            st.layout(g).shape().nodes > 1 || st.shm().is_none()
        })
}

/// `shm` cannot serve a non-blocking call now (`Some`): turned off, or the communicator's
/// window is not made yet (`Some(Some(state))`: the caller may want it, and the next
/// blocking collective on the communicator makes it), or refused, or it spans several nodes. No MPI call but a new
/// state's attribute.
fn shm_not_made(a: &Args, spec: &CallSpec) -> Option<Option<&'static crate::comm::CommState>> {
    if !crate::shm::enabled() {
        return Some(None);
    }
    if spec.p <= 1 {
        return None;
    }
    match crate::comm::state_nb(a.comm, spec.p, spec.rank) {
        Ok(st) if st.known_layout().is_none() || !st.shm_asked() => Some(Some(st)),
        Ok(st) => st.known_shm().is_none().then_some(None),
        Err(_) => Some(None),
    }
}

fn warn_once(coll: Collective, alg: Algorithm, msg: &str) {
    use std::sync::Mutex;
    static SEEN: Mutex<u128> = Mutex::new(0);
    let nalg = Algorithm::ALL.len();
    let bit =
        1u128 << (coll.index() * nalg + Algorithm::ALL.iter().position(|a| *a == alg).unwrap());
    let first = SEEN.lock().is_ok_and(|mut s| {
        let first = *s & bit == 0;
        *s |= bit;
        first
    });
    if first {
        log::warn!("{coll}: {msg}");
    }
}
