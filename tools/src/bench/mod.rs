//! Shared code of the MPI programs `pcoll-bench` (native vs every pcoll algorithm) and
//! `pcoll-tune` (writes a `tuning.toml` from measurements).
//!
//! Both run INSIDE one MPI job: native = `PMPI_*` called directly; a pcoll algorithm = the
//! exported `MPI_*` entry point (`pcoll_mpi::ffi::c`) with the algorithm forced through
//! [`pcoll_mpi::state::force`], i.e. exactly the path an interposed application takes. Variants
//! are interleaved per iteration (ABBA) and each repetition's time is the maximum over ranks
//! (see [`run`]). Communicator sizes below the job size use sub-communicators of ranks
//! `0..p`; the other ranks wait.
//!
//! Message size everywhere = the tuning table's key: reduce/allreduce `count * type size`,
//! reduce_scatter/allgatherv the TOTAL over all ranks (each rank gets / contributes about
//! `1/p` of it).

pub mod case;
pub mod floor;
pub mod kind;
pub mod model_hook;
pub mod mpi;
pub mod plot;
pub mod pool;
pub mod progress;
pub mod report;
pub mod run;
pub mod svg;
pub mod tune;
pub mod tuning_api;

use case::{Case, Variant};
use kind::{DType, OpKind};
use pcoll::segment::uses_segment;
use pcoll::{Algorithm, Collective};
use report::Measured;
use std::collections::BTreeMap;

/// The variants measured for `coll` by default: `auto` plus every algorithm available for
/// it (`Algorithm::available`, `native` there = pcoll's passthrough).
pub fn default_variants(coll: Collective) -> Vec<Variant> {
    let mut v = vec![Variant::Auto];
    v.extend(Algorithm::available(coll).iter().map(|a| Variant::Alg(*a)));
    v
}

/// The requested variants that exist for `coll` (`auto` always does; `alg@size` only for an
/// algorithm that uses a segment size there).
pub fn variants_for(coll: Collective, requested: &Option<Vec<Variant>>) -> Vec<Variant> {
    match requested {
        None => default_variants(coll),
        Some(list) => list
            .iter()
            .copied()
            .filter(|v| match v {
                Variant::Alg(a) => Algorithm::available(coll).contains(a),
                Variant::Seg(a, _) => uses_segment(*a, coll),
                _ => true,
            })
            .collect(),
    }
}

/// `variants` with `alg@size` added after each algorithm that uses a segment size for `coll`,
/// one per entry of `segments` (bytes), unless already there.
pub fn with_segments(coll: Collective, variants: &[Variant], segments: &[usize]) -> Vec<Variant> {
    let mut out = Vec::new();
    for &v in variants {
        if !out.contains(&v) {
            out.push(v);
        }
        if let Variant::Alg(a) = v {
            if uses_segment(a, coll) {
                for &b in segments {
                    let s = Variant::Seg(a, b);
                    if !out.contains(&s) && !variants.contains(&s) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out
}

/// Element counts for the requested byte sizes (at least one element; duplicates after
/// rounding to whole elements removed, order kept).
pub fn element_counts(sizes: &[usize], dt: DType) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &b in sizes {
        let n = case::elems_for(b, dt);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Measures one case on `comm` (collective over it). `comm` holds ranks `0..p`.
#[allow(clippy::too_many_arguments)]
pub fn measure_case(
    comm: mpi_sys::MPI_Comm,
    coll: Collective,
    p: usize,
    n: usize,
    dt: DType,
    op: OpKind,
    variants: &[Variant],
    opts: &run::Opts,
) -> Measured {
    let rank = mpi::rank(comm);
    let mut case = Case::new(coll, comm, p, rank, n, dt, op);
    let floor_us = if opts.floor {
        let counts: Vec<usize> = case.counts.iter().map(|&c| c as usize).collect();
        let work = floor::work(coll, p, case.bytes(), &counts, dt.size());
        floor::on_rank0(comm, work, opts.cold)
    } else {
        None
    };
    if opts.cold {
        case.make_cold();
    }
    let result = run::measure(&mut case, variants, opts);
    let params = pcoll_mpi::state::global().table.model();
    let mut predicted = BTreeMap::new();
    for v in &result.variants {
        // The model's optimum segment count: not a prediction for a fixed segment size.
        let fixed_segment = v.variant.segment().is_some();
        if v.variant != Variant::Native && v.algorithm != Algorithm::Native && !fixed_segment {
            if let Some(t) = model_hook::predict_us(coll, v.algorithm, p, case.bytes(), &params) {
                predicted.insert(v.variant.label(), t);
            }
        }
    }
    Measured {
        coll,
        p,
        bytes: case.bytes(),
        count: n,
        result,
        predicted,
        buffers: case.buffers(),
        floor_us,
    }
}

/// What `pcoll-bench` measures.
#[derive(Clone, Debug)]
pub struct Plan {
    pub colls: Vec<Collective>,
    pub ps: Vec<usize>,
    pub sizes: Vec<usize>,
    pub dt: DType,
    pub op: OpKind,
    /// None: [`default_variants`].
    pub variants: Option<Vec<Variant>>,
    /// Segment sizes (bytes) measured for every segmented algorithm ([`with_segments`]).
    pub segments: Vec<usize>,
    pub opts: run::Opts,
}

impl Plan {
    pub fn cases(&self) -> usize {
        self.ps.len() * self.colls.len() * element_counts(&self.sizes, self.dt).len()
    }
}

/// Runs the plan (collective over MPI_COMM_WORLD). Every case's result is returned on the
/// ranks of its communicator, so world rank 0 gets all of them.
pub fn run_plan(plan: &Plan, progress: &mut progress::Progress) -> Vec<Measured> {
    let mut out = Vec::new();
    let counts = element_counts(&plan.sizes, plan.dt);
    warm_up_mpi();
    for &p in &plan.ps {
        let sub = mpi::sub_comm(p);
        if let Some(comm) = sub {
            for &coll in &plan.colls {
                let vars = with_segments(coll, &variants_for(coll, &plan.variants), &plan.segments);
                for &n in &counts {
                    let m = measure_case(comm, coll, p, n, plan.dt, plan.op, &vars, &plan.opts);
                    progress.tick(&format!("{coll} p={p} {}", kind::short_size(m.bytes)));
                    out.push(m);
                }
            }
            mpi::free_comm(comm);
        }
        // Ranks outside the sub-communicator wait here.
        mpi::barrier(mpi::world());
    }
    out
}

/// A few untimed world-wide collectives before the first case (connections and progress
/// engines start lazily; otherwise the first case pays for it).
pub fn warm_up_mpi() {
    let mut v = vec![0.0f64; 1024];
    for _ in 0..20 {
        mpi::barrier(mpi::world());
        mpi::allreduce_max_f64(mpi::world(), &mut v);
    }
}

/// Parses a comma-separated list with `f`.
pub fn parse_list<T>(s: &str, f: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(f)
        .collect()
}

/// `"2,4"`, `"2..8"` (every p from 2 to 8) -> communicator sizes, checked against the job.
pub fn parse_ps(s: &str, world: usize) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let (lo, hi) = match part.split_once("..") {
            Some((a, b)) => (
                a.trim()
                    .parse::<usize>()
                    .map_err(|e| format!("bad p '{part}': {e}"))?,
                b.trim()
                    .parse::<usize>()
                    .map_err(|e| format!("bad p '{part}': {e}"))?,
            ),
            None => {
                let v = part
                    .parse::<usize>()
                    .map_err(|e| format!("bad p '{part}': {e}"))?;
                (v, v)
            }
        };
        for p in lo..=hi {
            if p == 0 || p > world {
                return Err(format!(
                    "p = {p} is not possible in a job of {world} ranks (1..={world})"
                ));
            }
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    if out.is_empty() {
        return Err("no communicator sizes given".into());
    }
    Ok(out)
}

/// The command line, parsed on every rank (rank `me == 0` prints the help or the error);
/// `Err` is the exit status (0 after `--help`/`--version`, 2 on a bad line).
pub fn parse_args<A: clap::Parser>(me: usize) -> Result<A, i32> {
    A::try_parse().map_err(|e| {
        if me == 0 {
            let _ = e.print();
        }
        if e.use_stderr() {
            2
        } else {
            0
        }
    })
}

/// Runs `main_body` with panics turned into an MPI abort (a panicking rank would otherwise
/// leave the others waiting forever) and MPI errors reported.
pub fn run_main(name: &str, main_body: impl FnOnce() -> i32) -> ! {
    mpi::init();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(main_body));
    match r {
        Ok(code) => {
            mpi::finalize();
            std::process::exit(code)
        }
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            let line = format!("{name}: fatal: {msg}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            mpi::abort(1)
        }
    }
}
