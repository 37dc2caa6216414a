//! pcoll-bench: native MPI collectives vs every pcoll algorithm, interleaved in one MPI job.
//!
//! ```text
//! mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 build/openmpi/pcoll-bench \
//!     --collectives reduce,allreduce --sizes 8..4m --check --plot results/demo.svg
//! ```
//!
//! No `LD_PRELOAD` is needed: the binary links pcoll's entry points itself (native =
//! `PMPI_*`, pcoll = the exported `MPI_*` with the algorithm forced). Environment variables
//! of the library (`PCOLL_TUNING`, `PCOLL_SEGMENT`, ...) apply to the pcoll variants.

use clap::Parser;
use pcoll::Collective;
use pcoll_tools::bench::case::Variant;
use pcoll_tools::bench::kind::{parse_size, parse_sizes, DType, OpKind};
use pcoll_tools::bench::{self, mpi, plot, progress::Progress, report, run::Opts, Plan};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Parser, Debug)]
#[command(
    name = "pcoll-bench",
    args_override_self = true,
    version,
    about = "Native MPI collectives vs pcoll's algorithms, interleaved (ABBA) in one MPI job",
    after_help = "Sizes are the tuning table's message size: reduce/allreduce/bcast the vector, \
reduce_scatter(_block)/allgather(v) the total over all ranks. Times are the median over repetitions of \
the maximum over ranks; floor = one core's memory-stream bound for the case (z = x + y or \
memcpy over the bytes of the busiest rank, measured on rank 0 alone), x_fl = median / floor. Variants: native (PMPI_* directly), auto (pcoll's table through \
MPI_*: with a `native` rule this is pcoll's native fast path), passthru (pcoll forced to \
native: interposition overhead), each algorithm, and alg@size (segment size set at run \
time)."
)]
struct Args {
    /// Collectives, comma-separated: reduce, allreduce, reduce_scatter, allgatherv, bcast,
    /// allgather, reduce_scatter_block.
    #[arg(long, default_value = "reduce,allreduce")]
    collectives: String,
    /// Message sizes in bytes: list and/or power-of-two ranges, e.g. 8,1k,64k,1m or 8..4m.
    #[arg(long, default_value = "4..16m")]
    sizes: String,
    /// Communicator sizes (sub-communicators of ranks 0..p), e.g. 2,4 or 2..8; default: all.
    #[arg(long)]
    p: Option<String>,
    /// Maximum timed iterations per case (each times every variant twice, ABBA).
    #[arg(long, default_value_t = 50)]
    iters: usize,
    /// Minimum timed iterations per case, whatever the time budget.
    #[arg(long, default_value_t = 5)]
    min_iters: usize,
    /// Untimed warm-up passes over all variants per case.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Time budget per case in seconds (iterations are reduced to fit; 0 = no limit).
    #[arg(long, default_value_t = 2.0)]
    budget: f64,
    /// Datatype: double, float, int, long, char (byte).
    #[arg(long, default_value = "double")]
    datatype: String,
    /// Reduction op: sum, max, min, prod.
    #[arg(long, default_value = "sum")]
    op: String,
    /// Variants: auto, passthru, algorithm names and name@size (e.g. greedy@32KiB); default:
    /// auto + every algorithm available for the collective. Unimplemented ones are left out
    /// automatically.
    #[arg(long)]
    algorithms: Option<String>,
    /// Segment sizes (bytes, list), e.g. 8KiB,32KiB,128KiB: each algorithm that uses a
    /// segment size for the collective (reduce: pipeline, greedy, greedy_uni, circulant;
    /// allreduce: greedy, circulant; reduce_scatter: circulant) is also measured at each,
    /// set at run time (`pcoll_segment`) and reported as `greedy@32KiB`.
    #[arg(long)]
    segments: Option<String>,
    /// Validate every pcoll result against native (bitwise; exact integer-valued data) and
    /// native against a sequential oracle; exit 1 on any mismatch.
    #[arg(long)]
    check: bool,
    /// Write all rows as CSV.
    #[arg(long)]
    csv: Option<String>,
    /// Write all rows (with run metadata) as JSON.
    #[arg(long)]
    json: Option<String>,
    /// Latency-vs-size plot (SVG, log-log, one line per variant, native thick black).
    #[arg(long)]
    plot: Option<String>,
    /// Ratio-to-native plot (SVG).
    #[arg(long)]
    plot_ratio: Option<String>,
    /// Measure nothing: draw --plot / --plot-ratio from the CSV of an earlier run (no MPI
    /// job needed).
    #[arg(long)]
    replot: Option<String>,
    /// Cold buffers: every call (every variant alike) on the next send/receive buffers of a
    /// pool of at least 96 MiB per rank, so no call finds its data in a cache (as IMB's
    /// -off_cache). Default: hot (the same buffers every call).
    #[arg(long)]
    cold: bool,
    /// Do not measure the floor (one core's memory-stream bound for each case, measured on
    /// rank 0 while the others wait, printed as `floor` and `x_fl` = median / floor).
    #[arg(long)]
    no_floor: bool,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
}

fn write_file(path: &str, text: &str) -> Result<(), String> {
    if let Some(dir) = std::path::Path::new(path).parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
    }
    std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))
}

fn plan(a: &Args, world: usize) -> Result<Plan, String> {
    let colls = bench::parse_list(&a.collectives, |s| s.parse::<Collective>())?;
    let variants = match &a.algorithms {
        None => None,
        Some(s) => Some(bench::parse_list(s, Variant::parse)?),
    };
    if a.iters == 0 {
        return Err("--iters must be at least 1".into());
    }
    Ok(Plan {
        colls,
        ps: match &a.p {
            None => vec![world],
            Some(s) => bench::parse_ps(s, world)?,
        },
        sizes: parse_sizes(&a.sizes)?,
        dt: a.datatype.parse::<DType>()?,
        op: a.op.parse::<OpKind>()?,
        variants,
        segments: match &a.segments {
            None => vec![],
            Some(s) => bench::parse_list(s, |x| match parse_size(x)? {
                0 => Err(format!("bad segment '{x}': must be > 0")),
                b if b > pcoll::tuning::MAX_SEGMENT => {
                    Err(format!("bad segment '{x}': at most 2GiB"))
                }
                b => Ok(b),
            })?,
        },
        opts: Opts {
            warmup: a.warmup,
            iters: a.iters,
            min_iters: a.min_iters.min(a.iters),
            budget: a.budget,
            check: a.check,
            show_mismatches: 5,
            cold: a.cold,
            floor: !a.no_floor,
        },
    })
}

fn body() -> i32 {
    let me = mpi::rank(mpi::world());
    let world = mpi::size(mpi::world());
    let args: Args = match bench::parse_args(me) {
        Ok(a) => a,
        Err(status) => return status,
    };
    let plan = match plan(&args, world) {
        Ok(p) => p,
        Err(e) => {
            if me == 0 {
                eprintln!("pcoll-bench: {e}");
            }
            return 2;
        }
    };
    let meta = report::Meta {
        tool: format!("pcoll-bench {}", env!("CARGO_PKG_VERSION")),
        mpi: mpi::mpi_name().into(),
        mpi_version: mpi::library_version(),
        world_size: world,
        datatype: plan.dt,
        op: plan.op,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        unix_time: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        buffers: if args.cold { "cold" } else { "hot" }.into(),
    };
    let mut prog = Progress::new(plan.cases(), me == 0 && !args.quiet);
    let ms = bench::run_plan(&plan, &mut prog);
    prog.finish();
    if me != 0 {
        return 0;
    }
    print!("{}", report::table(&meta, &ms));
    // Before the stderr lines that follow (mpirun forwards both streams).
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let rows = report::rows(&meta, &ms);
    let mut status = 0;
    let mut out = |path: &Option<String>, text: &dyn Fn() -> String| {
        if let Some(p) = path {
            match write_file(p, &text()) {
                Ok(()) => eprintln!("pcoll-bench: wrote {p}"),
                Err(e) => {
                    eprintln!("pcoll-bench: {e}");
                    status = 1;
                }
            }
        }
    };
    out(&args.csv, &|| report::csv(&rows));
    out(&args.json, &|| {
        let doc = report::Document {
            meta: meta.clone(),
            rows: rows.clone(),
            skipped: report::skipped(&ms),
        };
        serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
    });
    out(&args.plot, &|| plot::latency_plot(&rows));
    out(&args.plot_ratio, &|| plot::ratio_plot(&rows));
    if args.check {
        let bad: i64 = rows.iter().filter_map(|r| r.mismatches).sum();
        let errs: i64 = rows.iter().map(|r| r.errors).sum();
        if bad != 0 || errs != 0 {
            eprintln!("pcoll-bench: CHECK FAILED: {bad} mismatching elements, {errs} MPI errors");
            status = 1;
        } else {
            eprintln!("pcoll-bench: check passed: every pcoll result equals native, native equals the oracle");
        }
    }
    status
}

/// `--replot FILE.csv`: the plots of an earlier run, without MPI.
fn replot(args: &Args, csv: &str) -> i32 {
    let rows = match std::fs::read_to_string(csv)
        .map_err(|e| format!("{csv}: {e}"))
        .and_then(|t| plot::rows_from_csv(&t).map_err(|e| format!("{csv}: {e}")))
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pcoll-bench: {e}");
            return 2;
        }
    };
    let mut status = 0;
    for (path, draw) in [
        (
            &args.plot,
            plot::latency_plot as fn(&[report::Row]) -> String,
        ),
        (&args.plot_ratio, plot::ratio_plot),
    ] {
        if let Some(p) = path {
            match write_file(p, &draw(&rows)) {
                Ok(()) => eprintln!("pcoll-bench: wrote {p}"),
                Err(e) => {
                    eprintln!("pcoll-bench: {e}");
                    status = 1;
                }
            }
        }
    }
    status
}

fn main() {
    if std::env::args().any(|a| a == "--replot" || a.starts_with("--replot=")) {
        let args = Args::parse();
        let csv = args.replot.clone().unwrap_or_default();
        std::process::exit(replot(&args, &csv));
    }
    bench::run_main("pcoll-bench", body)
}
