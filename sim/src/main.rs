//! `pcoll-sim`: predicted times from the alpha-beta-gamma model, the papers' claims
//! reproduced side by side, and Gantt charts of reduction schedules.
//!
//! ```text
//! pcoll-sim predict --collective reduce --p 64 --bytes 1048576 [--alpha A --beta B --gamma G] [--half]
//! pcoll-sim paper [trees]
//! pcoll-sim draw --algorithm greedy --p 15 --segments 5 [--tcomm 2 --tcomp 1] -o f.svg
//! pcoll-sim schedule --p 17 --blocks 4 --format json|table
//! pcoll-sim choose --table FILE|builtin --mpi NAME --collective LIST --p LIST \
//!     --bytes LIST [--op commutative|noncommutative] [--format json|table]
//! pcoll-sim scale --table FILE|builtin --mpi NAME [--p 2..65536] -o f.svg
//! ```

mod choose;
mod draw;
mod paper;
mod paper_trees;
mod scale;

use clap::{Parser, Subcommand};
use pcoll::algo::{Collective, CostParams};
use pcoll::config::Config;
use pcoll::model::native::Mpi;
use pcoll::model::{lower_bound, predict_scheme, time_with_segments, Duplex, Prediction, Scheme};

#[derive(Parser)]
#[command(
    name = "pcoll-sim",
    about = "pcoll cost model, paper reproductions, the library's decisions at any scale and schedule drawings (no MPI)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Every algorithm's predicted time (best segment count) and the lower bound.
    Predict {
        #[arg(long, default_value = "reduce")]
        collective: Collective,
        #[arg(long)]
        p: usize,
        /// Message bytes (reduce/allreduce: the vector; others: total over all ranks).
        #[arg(long)]
        bytes: usize,
        /// Latency, seconds (default: the built-in constants).
        #[arg(long)]
        alpha: Option<f64>,
        /// Seconds per byte transferred.
        #[arg(long)]
        beta: Option<f64>,
        /// Seconds per byte reduced.
        #[arg(long)]
        gamma: Option<f64>,
        /// Half-duplex model (default full-duplex).
        #[arg(long)]
        half: bool,
    },
    /// Reproduce the papers' claims (Träff, Lowery–Langou, Rabenseifner–Träff, the tree
    /// report) with printed values.
    Paper {
        /// Only one section: `trees` (the tree report); default every section.
        section: Option<String>,
    },
    /// Gantt chart (SVG) of a reduction schedule: one row per rank, one colour per segment.
    Draw {
        /// greedy (bi-greedy), greedy_uni, pipeline (chain), binary or fibonacci (the tree
        /// report's), heap_binary (Lowery–Langou's).
        #[arg(long, default_value = "greedy")]
        algorithm: String,
        #[arg(long)]
        p: usize,
        #[arg(long, default_value_t = 1)]
        segments: usize,
        #[arg(long, default_value_t = 2)]
        tcomm: u64,
        #[arg(long, default_value_t = 1)]
        tcomp: u64,
        #[arg(short = 'o', long, default_value = "schedule.svg")]
        output: String,
    },
    /// Träff's circulant receive/send schedules (before the virtual-round offset, in the
    /// paper's convention), as JSON or as the paper's table.
    Schedule {
        #[arg(long)]
        p: usize,
        /// Number of blocks n (recorded in the JSON; schedules do not depend on it).
        #[arg(long, default_value_t = 1)]
        blocks: usize,
        #[arg(long, default_value = "json")]
        format: String,
    },
    /// The decision the library makes for each cell (same code), and every option's
    /// predicted time. PCOLL_<COLL> and PCOLL_SEGMENT in the environment apply, as in the
    /// library. `shm` as on a communicator whose window is made (its first calls asking for
    /// it run without it, native where the cell is raced, else the decision without it:
    /// PCOLL_SHM_AFTER).
    Choose {
        /// A tuning.toml, or `builtin` (the table embedded in the library built for --mpi).
        #[arg(long, default_value = "builtin")]
        table: String,
        /// Whose native collectives are modelled (and whose built-in table).
        #[arg(long, default_value = "openmpi")]
        mpi: Mpi,
        /// Collectives, comma-separated (or `all`).
        #[arg(long, default_value = "all")]
        collective: String,
        /// Communicator sizes: comma-separated, or lo..hi for the powers of two in between.
        #[arg(long)]
        p: String,
        /// Message bytes: comma-separated, or lo..hi (k/m/g suffixes: 8..256m).
        #[arg(long)]
        bytes: String,
        /// commutative or noncommutative (reductions).
        #[arg(long, default_value = "commutative")]
        op: String,
        /// json (one object per line) or table.
        #[arg(long, default_value = "table")]
        format: String,
        /// Ranks per node (nodes of consecutive ranks; two-level model with [model.net]).
        #[arg(long, default_value_t = 0)]
        ppn: usize,
        /// Nodes (instead of --ppn: ppn = ceil(p / nodes)).
        #[arg(long, default_value_t = 0)]
        nodes: usize,
        /// Some node runs more ranks than cores (the library agrees it at MPI_Init): the
        /// model's pcoll picks below 4 KiB go native there.
        #[arg(long)]
        crowded: bool,
        /// The root of reduce and bcast (a table rule may read it: `root = "nonzero"`).
        #[arg(long, default_value_t = 0)]
        root: usize,
    },
    /// Predicted time against p for each collective at 8 B, 64 KiB and 16 MiB: every pcoll
    /// algorithm, native's own algorithm and the decision, as an SVG (one panel per cell).
    Scale {
        #[arg(long, default_value = "builtin")]
        table: String,
        #[arg(long, default_value = "openmpi")]
        mpi: Mpi,
        /// Communicator sizes (powers of two with lo..hi).
        #[arg(long, default_value = "2..65536")]
        p: String,
        /// Message sizes, one column of panels each.
        #[arg(long, default_value = "8,64k,16m")]
        bytes: String,
        #[arg(short = 'o', long, default_value = "scale.svg")]
        output: String,
    },
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("pcoll-sim: {msg}");
    std::process::exit(2);
}

fn collectives(s: &str) -> Vec<Collective> {
    if s == "all" {
        return Collective::ALL.to_vec();
    }
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| x.trim().parse::<Collective>().unwrap_or_else(|e| fail(e)))
        .collect()
}

fn env_config() -> Config {
    let (cfg, warns) = Config::from_env();
    for w in warns {
        eprintln!("pcoll-sim: warning: {w}");
    }
    cfg
}

#[allow(clippy::too_many_arguments)]
fn choose_cmd(
    table: &str,
    mpi: Mpi,
    colls: &str,
    p: &str,
    bytes: &str,
    op: &str,
    format: &str,
    (ppn, nodes, crowded, root): (usize, usize, bool, usize),
) {
    let table = choose::load_table(table, mpi).unwrap_or_else(|e| fail(e));
    let cfg = env_config();
    let ps = choose::parse_p_list(p).unwrap_or_else(|e| fail(e));
    let sizes = pcoll::tuning::size::parse_size_list(bytes)
        .unwrap_or_else(|e| fail(format!("--bytes: {e}")));
    let commutative = match op {
        "commutative" => true,
        "noncommutative" => false,
        o => fail(format!(
            "unknown --op '{o}' (accepted: commutative, noncommutative)"
        )),
    };
    if !matches!(format, "json" | "table") {
        fail(format!(
            "unknown --format '{format}' (accepted: json, table)"
        ));
    }
    if format == "table" {
        println!("{}", choose::table_header());
    }
    for coll in collectives(colls) {
        for &p in &ps {
            for &b in &sizes {
                let k = if nodes > 0 { p.div_ceil(nodes) } else { ppn };
                let c = choose::cell_on(
                    &cfg,
                    &table,
                    mpi,
                    (coll, p, b, commutative),
                    (k, crowded, root),
                )
                .unwrap_or_else(|e| fail(e));
                if format == "json" {
                    println!("{}", choose::to_json(&c, &table, mpi));
                } else {
                    println!("{}", choose::table_row(&c, &table));
                }
            }
        }
    }
}

fn main() {
    match Cli::parse().cmd {
        Cmd::Predict {
            collective,
            p,
            bytes,
            alpha,
            beta,
            gamma,
            half,
        } => {
            let d = CostParams::default();
            let c = CostParams {
                alpha: alpha.unwrap_or(d.alpha),
                beta: beta.unwrap_or(d.beta),
                gamma: gamma.unwrap_or(d.gamma),
            };
            let duplex = if half { Duplex::Half } else { Duplex::Full };
            predict_cmd(collective, p, bytes, &c, duplex);
        }
        Cmd::Paper { section } => match section.as_deref() {
            None | Some("all") => paper::paper(),
            Some("trees") => paper_trees::report_trees(),
            Some(other) => fail(format!("unknown section '{other}' (accepted: all, trees)")),
        },
        Cmd::Draw {
            algorithm,
            p,
            segments,
            tcomm,
            tcomp,
            output,
        } => {
            let svg = draw::draw(&algorithm, p, segments, tcomm, tcomp).unwrap_or_else(|e| fail(e));
            write_output(&output, &svg);
        }
        Cmd::Choose {
            table,
            mpi,
            collective,
            p,
            bytes,
            op,
            format,
            ppn,
            nodes,
            crowded,
            root,
        } => choose_cmd(
            &table,
            mpi,
            &collective,
            &p,
            &bytes,
            &op,
            &format,
            (ppn, nodes, crowded, root),
        ),
        Cmd::Scale {
            table,
            mpi,
            p,
            bytes,
            output,
        } => scale_cmd(&table, mpi, &p, &bytes, &output),
        Cmd::Schedule { p, blocks, format } => schedule_cmd(p, blocks, &format),
    }
}

/// Writes a drawing; exit status 1 when it cannot be written.
fn write_output(path: &str, text: &str) {
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("pcoll-sim: cannot write {path}: {e}");
        std::process::exit(1);
    }
    println!("wrote {path}");
}

fn scale_cmd(table: &str, mpi: Mpi, p: &str, bytes: &str, output: &str) {
    let t = choose::load_table(table, mpi).unwrap_or_else(|e| fail(e));
    let ps = choose::parse_p_list(p).unwrap_or_else(|e| fail(e));
    let sizes = pcoll::tuning::size::parse_size_list(bytes)
        .unwrap_or_else(|e| fail(format!("--bytes: {e}")));
    let svg = scale::svg(&env_config(), &t, mpi, &ps, &sizes);
    if let Err(e) = std::fs::write(output, svg) {
        fail(format!("cannot write {output}: {e}"));
    }
    println!("wrote {output}");
}

fn schedule_cmd(p: usize, blocks: usize, format: &str) {
    if p == 0 {
        eprintln!("pcoll-sim schedule: --p must be at least 1");
        std::process::exit(2);
    }
    match format {
        "json" => println!("{}", pcoll::sched::circulant::schedule_json(p, blocks)),
        "table" => print!("{}", pcoll::sched::circulant::schedule_table(p)),
        other => {
            eprintln!("pcoll-sim schedule: unknown --format '{other}' (accepted: json, table)");
            std::process::exit(2);
        }
    }
}

fn predict_cmd(coll: Collective, p: usize, bytes: usize, c: &CostParams, duplex: Duplex) {
    println!(
        "{coll}, p = {p}, {bytes} bytes, alpha = {:e} s, beta = {:e} s/B, gamma = {:e} s/B, {:?}-duplex",
        c.alpha, c.beta, c.gamma, duplex
    );
    let lb = lower_bound(coll, p, bytes, c, duplex);
    // The tree report's trees also unsegmented (its algorithm 1), beside their best segments.
    let plain = |s: Scheme| Prediction {
        time: time_with_segments(coll, s, p, bytes, c, duplex, 1),
        segments: 1,
    };
    let mut rows: Vec<(String, Prediction)> = Scheme::ALL
        .iter()
        .map(|&s| {
            (
                s.name().to_string(),
                predict_scheme(coll, s, p, bytes, c, duplex),
            )
        })
        .chain(
            [Scheme::Binary, Scheme::Fibonacci].map(|s| (format!("{} plain", s.name()), plain(s))),
        )
        .filter(|(_, pr)| pr.time.is_finite())
        .collect();
    rows.sort_by(|a, b| a.1.time.total_cmp(&b.1.time));
    println!(
        "{:<15} {:>9} {:>14} {:>9}",
        "algorithm", "segments", "time [s]", "/bound"
    );
    for (s, pr) in rows {
        println!(
            "{:<15} {:>9} {:>14.6e} {:>9.3}",
            s,
            pr.segments,
            pr.time,
            if lb > 0.0 { pr.time / lb } else { 1.0 }
        );
    }
    println!("{:<15} {:>9} {:>14.6e}", "lower bound", "", lb);
}
