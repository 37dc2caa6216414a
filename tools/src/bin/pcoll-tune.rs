//! pcoll-tune: measures every algorithm against native over a grid of communicator sizes
//! (sub-communicators 2..P) and message sizes, re-measures close calls, merges neighbouring
//! cells with the same winner into rules, fits the cost model, and writes a `tuning.toml`
//! (load it with `PCOLL_TUNING=path`).
//!
//! ```text
//! mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 build/openmpi/pcoll-tune \
//!     --out results/tuning.openmpi.toml
//! ```
//!
//! Segment sizes: in cells of `--segment-min` (64 KiB) and more, the fastest algorithm that
//! uses a segment size (pipeline, greedy, greedy_uni, circulant) is re-measured at segment
//! sizes around the cost model's choice (`--segment-factors`, set at run time through
//! `pcoll_segment`); a winning size is written as the rule's `segment`.

use clap::Parser;
use pcoll::Collective;
use pcoll::CostParams;
use pcoll_tools::bench::case::Variant;
use pcoll_tools::bench::kind::{parse_size, parse_sizes, short_size, DType, OpKind};
use pcoll_tools::bench::model_hook::{self, Sample};
use pcoll_tools::bench::report::{self, Measured};
use pcoll_tools::bench::run::Opts;
use pcoll_tools::bench::tune::{self, Cell};
use pcoll_tools::bench::{self, mpi, progress::Progress, tuning_api};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Parser, Debug)]
#[command(
    name = "pcoll-tune",
    args_override_self = true,
    version,
    about = "Measure pcoll's algorithms against native and write a tuning.toml"
)]
struct Args {
    /// Output file.
    #[arg(long, default_value = "tuning.toml")]
    out: String,
    /// Collectives to tune, comma-separated (any of the seven pcoll serves: reduce, allreduce,
    /// reduce_scatter, allgatherv, bcast, allgather, reduce_scatter_block).
    #[arg(long, default_value = "reduce,allreduce,reduce_scatter,allgatherv")]
    collectives: String,
    /// Communicator sizes (sub-communicators of ranks 0..p); default 2..<job size>.
    #[arg(long)]
    p: Option<String>,
    /// Message sizes (bytes; list and/or power-of-two ranges).
    #[arg(long, default_value = "8..16m")]
    sizes: String,
    /// Use every 4th power of two from the range instead of every one (quicker grid).
    #[arg(long)]
    coarse: bool,
    #[arg(long, default_value_t = 20)]
    iters: usize,
    #[arg(long, default_value_t = 3)]
    min_iters: usize,
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Time budget per case in seconds.
    #[arg(long, default_value_t = 1.5)]
    budget: f64,
    /// Candidates within this relative margin of the fastest are re-measured.
    #[arg(long, default_value_t = 0.05)]
    close: f64,
    /// An isolated size whose neighbours agree on another algorithm takes it when that one is
    /// within this relative margin there (0 = off).
    #[arg(long, default_value_t = 0.10)]
    smooth: f64,
    /// Try segment sizes in cells of at least this many bytes (`off`: never).
    #[arg(long, default_value = "64k")]
    segment_min: String,
    /// Segment sizes tried: the model's segment times each factor, rounded to a power of two
    /// (sizes giving the same segment count as the model's or an earlier one are skipped).
    #[arg(long, default_value = "0.0625,0.25,4")]
    segment_factors: String,
    /// Only an algorithm within this relative margin of the cell's fastest gets its segment
    /// sizes tried (1.0 = up to 2x slower at the model's segment).
    #[arg(long, default_value_t = 1.0)]
    segment_margin: f64,
    /// Iterations of a re-measurement.
    #[arg(long, default_value_t = 40)]
    remeasure_iters: usize,
    #[arg(long, default_value = "double")]
    datatype: String,
    #[arg(long, default_value = "sum")]
    op: String,
    /// Skip the alpha/beta/gamma fit (the [model] section keeps the current values).
    #[arg(long)]
    no_model: bool,
    /// Also write every measurement as CSV.
    #[arg(long)]
    csv: Option<String>,
    #[arg(long)]
    quiet: bool,
}

/// Ping-pong (alpha, beta) between world ranks 0 and 1 and `MPI_Reduce_local` (gamma);
/// collective over MPI_COMM_WORLD; the fit is broadcast so every rank has it.
fn fit_model(reps: usize) -> (CostParams, Vec<Sample>) {
    let world = mpi::world();
    let mut samples = Vec::new();
    let sizes = [
        8usize,
        64,
        512,
        4 << 10,
        32 << 10,
        256 << 10,
        1 << 20,
        4 << 20,
    ];
    if mpi::size(world) >= 2 {
        // One untimed pass first: connections and eager/rendezvous paths are set up lazily.
        for b in sizes {
            mpi::pingpong(world, b, 2);
        }
        for b in sizes {
            let t = mpi::pingpong(world, b, reps);
            samples.push(Sample::PingPong {
                bytes: b as f64,
                time: t,
            });
        }
    }
    for b in [64usize << 10, 256 << 10, 1 << 20, 4 << 20] {
        samples.push(Sample::LocalReduce {
            bytes: b as f64,
            time: mpi::reduce_local_time(b, reps),
        });
    }
    let c = model_hook::fit(&samples);
    let mut v = [c.alpha, c.beta, c.gamma];
    mpi::bcast_f64(world, &mut v);
    (
        CostParams {
            alpha: v[0],
            beta: v[1],
            gamma: v[2],
        },
        samples,
    )
}

/// The run's parameters, parsed and checked.
struct Setup {
    colls: Vec<Collective>,
    ps: Vec<usize>,
    dt: DType,
    op: OpKind,
    counts: Vec<usize>,
    segment_min: usize,
    factors: Vec<f64>,
    opts: Opts,
    re_opts: Opts,
}

fn setup(args: &Args, nw: usize) -> Result<Setup, String> {
    let colls = bench::parse_list(&args.collectives, |s| s.parse::<Collective>())?;
    let ps = match &args.p {
        Some(s) => bench::parse_ps(s, nw)?,
        None if nw >= 2 => bench::parse_ps(&format!("2..{nw}"), nw)?,
        None => return Err("pcoll-tune needs at least 2 ranks (p = 1 has nothing to tune)".into()),
    };
    let ps: Vec<usize> = ps.into_iter().filter(|&p| p >= 2).collect();
    if ps.is_empty() {
        return Err("no communicator size >= 2 to tune".into());
    }
    let dt = args.datatype.parse::<DType>()?;
    let op = args.op.parse::<OpKind>()?;
    let mut sizes = parse_sizes(&args.sizes)?;
    if args.coarse {
        sizes = sizes
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 4 == 0 || *i == sizes.len() - 1)
            .map(|(_, s)| *s)
            .collect();
    }
    let segment_min = match args.segment_min.trim() {
        "off" | "inf" | "none" => usize::MAX,
        t => parse_size(t).map_err(|e| format!("--segment-min: {e}"))?,
    };
    let factors = bench::parse_list(&args.segment_factors, |x| {
        x.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && *f > 0.0)
            .ok_or_else(|| format!("--segment-factors: bad factor '{x}' (positive numbers)"))
    })?;
    let opts = Opts {
        warmup: args.warmup,
        iters: args.iters.max(1),
        min_iters: args.min_iters.min(args.iters.max(1)),
        budget: args.budget,
        check: true, // a candidate with a wrong result never wins
        show_mismatches: 3,
        cold: false,
        floor: false,
    };
    let re_opts = Opts {
        warmup: 1,
        iters: args.remeasure_iters.max(1),
        min_iters: (args.remeasure_iters / 4).max(3),
        budget: 2.0 * args.budget,
        ..opts.clone()
    };
    Ok(Setup {
        colls,
        ps,
        counts: bench::element_counts(&sizes, dt),
        dt,
        op,
        segment_min,
        factors,
        opts,
        re_opts,
    })
}

/// What the grid measured.
#[derive(Default)]
struct Grid {
    cells: Vec<Cell>,
    all: Vec<Measured>,
    remeasured: usize,
    seg_cells: usize,
}

/// Measures every (p, collective, size) of the grid on every rank.
fn grid(args: &Args, st: &Setup, me: usize) -> Grid {
    let world = mpi::world();
    let mut prog = Progress::new(
        st.ps.len() * st.colls.len() * st.counts.len(),
        me == 0 && !args.quiet,
    );
    let mut g = Grid::default();
    for &p in &st.ps {
        if let Some(comm) = mpi::sub_comm(p) {
            for &coll in &st.colls {
                let vars: Vec<Variant> = bench::default_variants(coll)
                    .into_iter()
                    .filter(|v| tune::is_candidate(*v))
                    .collect();
                for &n in &st.counts {
                    let m = cell(args, st, &mut g, comm, coll, p, n, &vars);
                    prog.tick(&format!("{coll} p={p} {}", short_size(m.bytes)));
                    g.all.push(m);
                }
            }
            mpi::free_comm(comm);
        }
        mpi::barrier(world);
    }
    prog.finish();
    g
}

/// One cell: every candidate, then the close calls and segment sizes re-measured together;
/// the cell's decision goes into `g`, the measurement that decided is returned.
#[allow(clippy::too_many_arguments)]
fn cell(
    args: &Args,
    st: &Setup,
    g: &mut Grid,
    comm: mpi_sys::MPI_Comm,
    coll: Collective,
    p: usize,
    n: usize,
    vars: &[Variant],
) -> Measured {
    let (dt, op) = (st.dt, st.op);
    let m = bench::measure_case(comm, coll, p, n, dt, op, vars, &st.opts);
    let rank = tune::ranking(&m);
    let mut close = tune::close_calls(&rank, args.close);
    // Segment sizes of the fastest segmented algorithm, measured together with the close
    // calls (one re-measurement per cell). The model the library runs with: its segment
    // choice is what the factors scale.
    let segs = if n * dt.size() >= st.segment_min {
        let lib_model = pcoll_mpi::state::global().table.model();
        let spec = tune::probe_spec(coll, p, n, dt.size(), lib_model);
        tune::segment_variants(&spec, &rank, args.segment_margin, &st.factors)
    } else {
        vec![]
    };
    if !segs.is_empty() {
        g.seg_cells += 1;
    }
    for v in segs {
        if !close.contains(&v) {
            close.push(v);
        }
    }
    // Identical on every rank (results are reduced), so all ranks agree.
    let again = close.len() > 1;
    let m = if again {
        let r = bench::measure_case(comm, coll, p, n, dt, op, &close, &st.re_opts);
        g.all.push(m);
        g.remeasured += 1;
        r
    } else {
        m
    };
    if let Some(c) = Cell::decide(&m, again) {
        g.cells.push(c);
    }
    m
}

/// The comments heading the file: who wrote it, from what, and how cells were decided.
fn header(args: &Args, st: &Setup, g: &Grid, smoothed: usize, now: u64, nw: usize) -> [String; 3] {
    let (dt, op, counts) = (st.dt, st.op, &st.counts);
    [
        format!(
            "pcoll tuning table written by pcoll-tune {} (unix time {now})",
            env!("CARGO_PKG_VERSION")
        ),
        format!(
            "MPI: {} ({}); job of {nw} ranks; p = {:?}; {} sizes {}..{} B; datatype {dt}, op {op}",
            mpi::library_version(),
            mpi::mpi_name(),
            st.ps,
            counts.len(),
            counts.first().map_or(0, |n| n * dt.size()),
            counts.last().map_or(0, |n| n * dt.size()),
        ),
        format!(
            "Winner per cell = smallest median (max over ranks) of native and every algorithm, \
interleaved ABBA; candidates within {:.0}% re-measured ({} cells); isolated cells within {:.0}% of their \
neighbours' choice smoothed ({smoothed} cells); neighbouring cells with the same winner merged. \
Segment sizes: in {} cells of >= {} B the fastest segmented algorithm (within {:.0}%) was also measured at \
the model's segment x {} (powers of two, set with pcoll_segment); `segment` = a size that won, none = the model's.",
            args.close * 100.0,
            g.remeasured,
            args.smooth * 100.0,
            g.seg_cells,
            if st.segment_min == usize::MAX { "inf".to_string() } else { short_size(st.segment_min) },
            args.segment_margin * 100.0,
            args.segment_factors,
        ),
    ]
}

/// The `[model]` comments: the samples the fit used.
fn model_comments(samples: &[Sample]) -> [String; 2] {
    let fmt = |want_pp: bool| -> Vec<String> {
        samples
            .iter()
            .filter_map(|s| match (s, want_pp) {
                (Sample::PingPong { bytes, time }, true) => Some(format!(
                    "{}:{:.2}us",
                    short_size(*bytes as usize),
                    time * 1e6
                )),
                (Sample::LocalReduce { bytes, time }, false) => Some(format!(
                    "{}:{:.1}us",
                    short_size(*bytes as usize),
                    time * 1e6
                )),
                _ => None,
            })
            .collect()
    };
    [
        format!(
            "[model] least-squares fit: ping-pong one-way times (alpha + beta*bytes) {}",
            fmt(true).join(" ")
        ),
        format!(
            "and MPI_Reduce_local(sum, double) times (gamma*bytes) {}",
            fmt(false).join(" ")
        ),
    ]
}

/// The table's text: header, model, the measured rules, the cost model everywhere else;
/// checked to parse back.
fn table_text(
    args: &Args,
    header: [String; 3],
    fit: Option<(CostParams, &[Sample])>,
    spans: &[tune::Span],
) -> Result<String, String> {
    let mut b = tuning_api::builder().origin(args.out.clone());
    for c in header {
        b = b.comment(c);
    }
    if let Some((params, samples)) = fit {
        for c in model_comments(samples) {
            b = b.comment(c);
        }
        b = b.model(params);
    }
    for s in spans {
        b = b.rule(s.coll, s.rule());
    }
    // Every cell not measured: the cost model (the measured rules cover only measured p).
    for coll in Collective::ALL {
        b = b.rule(
            coll,
            tuning_api::Rule::new(pcoll::Pick::Model).note(format!(
                "every {coll} cell not measured above (other p): the cost model with [model], native's own choice priced too"
            )),
        );
    }
    let text = b
        .build()
        .map_err(|e| format!("internal error, the generated table is invalid: {e}"))?
        .to_toml();
    tuning_api::parse(&text, &args.out)
        .map_err(|e| format!("internal error, the written table does not parse: {e}"))?;
    Ok(text)
}

/// Writes the table (and the CSV of every measurement, if asked).
fn write_outputs(
    args: &Args,
    st: &Setup,
    g: &Grid,
    text: &str,
    now: u64,
    nw: usize,
) -> Result<(), String> {
    if let Some(dir) = std::path::Path::new(&args.out).parent() {
        if !dir.as_os_str().is_empty() {
            let _ = std::fs::create_dir_all(dir);
        }
    }
    std::fs::write(&args.out, text).map_err(|e| format!("{}: {e}", args.out))?;
    if let Some(path) = &args.csv {
        let meta = report::Meta {
            tool: format!("pcoll-tune {}", env!("CARGO_PKG_VERSION")),
            mpi: mpi::mpi_name().into(),
            mpi_version: mpi::library_version(),
            world_size: nw,
            datatype: st.dt,
            op: st.op,
            command: std::env::args().collect::<Vec<_>>().join(" "),
            unix_time: now,
            buffers: "hot".into(),
        };
        if let Err(e) = std::fs::write(path, report::csv(&report::rows(&meta, &g.all))) {
            eprintln!("pcoll-tune: {path}: {e}");
        }
    }
    Ok(())
}

fn body() -> i32 {
    let world = mpi::world();
    let me = mpi::rank(world);
    let nw = mpi::size(world);
    let args: Args = match bench::parse_args(me) {
        Ok(a) => a,
        Err(status) => return status,
    };
    let st = match setup(&args, nw) {
        Ok(s) => s,
        Err(e) => {
            if me == 0 {
                eprintln!("pcoll-tune: {e}");
            }
            return 2;
        }
    };
    // 1. Model fit (before the grid, while nothing else of ours runs).
    let (params, samples) = if args.no_model {
        (pcoll_mpi::state::global().table.model(), vec![])
    } else {
        fit_model(20)
    };
    // 2. The grid.
    bench::warm_up_mpi();
    let mut g = grid(&args, &st, me);
    if me != 0 {
        return 0;
    }
    // 3. Rules and the file.
    tune::smooth(&mut g.cells, args.smooth);
    let smoothed = g.cells.iter().filter(|c| c.smoothed).count();
    let spans = tune::spans(&g.cells);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let head = header(&args, &st, &g, smoothed, now, nw);
    let fit = (!args.no_model).then_some((params, samples.as_slice()));
    let written = table_text(&args, head, fit, &spans)
        .and_then(|text| write_outputs(&args, &st, &g, &text, now, nw).map(|()| text));
    let text = match written {
        Ok(t) => t,
        Err(e) => {
            eprintln!("pcoll-tune: {e}");
            return 1;
        }
    };
    print!("{text}");
    // Before the stderr lines that follow (mpirun forwards both streams).
    let _ = std::io::Write::flush(&mut std::io::stdout());
    eprintln!(
        "pcoll-tune: wrote {} ({} rules from {} cells; model alpha={:.3e} beta={:.3e} gamma={:.3e})",
        args.out,
        spans.len(),
        g.cells.len(),
        params.alpha,
        params.beta,
        params.gamma
    );
    0
}

fn main() {
    bench::run_main("pcoll-tune", body)
}
