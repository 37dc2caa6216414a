//! `pcoll-sim`: predicted times from the alpha-beta-gamma model, the papers' claims
//! reproduced side by side, and Gantt charts of reduction schedules.
//!
//! ```text
//! pcoll-sim predict --collective reduce --p 64 --bytes 1048576 [--alpha A --beta B --gamma G] [--half]
//! pcoll-sim paper
//! pcoll-sim draw --algorithm greedy --p 15 --segments 5 [--tcomm 2 --tcomp 1] -o f.svg
//! pcoll-sim schedule --p 17 --blocks 4 --format json|table
//! pcoll-sim choose --table FILE|builtin --mpi openmpi|mpich --collective LIST --p LIST \
//!     --bytes LIST [--op commutative|noncommutative] [--format json|table]
//! pcoll-sim scale --table FILE|builtin --mpi openmpi|mpich [--p 2..65536] -o f.svg
//! ```

mod choose;
mod scale;

use clap::{Parser, Subcommand};
use pcoll::algo::{Collective, CostParams};
use pcoll::config::Config;
use pcoll::model::native::Mpi;
use pcoll::model::paper::{rt_table1_cells, LL_FIG45, LL_FIG6, RT_PROTOCOLS};
use pcoll::model::{lower_bound, predict_scheme, simulate_tree_events, Duplex, Prediction, Scheme};
use pcoll::sched::blocks::ceil_log2;
use pcoll::sched::greedy::{bi_greedy, bi_greedy_conjecture, uni_greedy, SegCost};
use pcoll::sched::pipeline::{binary_parents, chain_parents};
use std::fmt::Write as _;

#[derive(Parser)]
#[command(
    name = "pcoll-sim",
    about = "pcoll cost model, paper reproductions and schedule drawings"
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
    /// Reproduce the papers' claims (Lowery–Langou, Rabenseifner–Träff) with printed values.
    Paper,
    /// Gantt chart (SVG) of a reduction schedule: one row per rank, one colour per segment.
    Draw {
        /// greedy (bi-greedy), greedy_uni, pipeline (chain) or binary.
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
    /// Circulant schedules (to be wired by the coordinator).
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
    /// library.
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
    (ppn, nodes): (usize, usize),
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
                let c = choose::cell_on(&cfg, &table, mpi, (coll, p, b, commutative), k)
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
    let cli = Cli::parse();
    match cli.cmd {
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
        Cmd::Paper => paper(),
        Cmd::Draw {
            algorithm,
            p,
            segments,
            tcomm,
            tcomp,
            output,
        } => match draw(&algorithm, p, segments, tcomm, tcomp) {
            Ok(svg) => {
                if let Err(e) = std::fs::write(&output, svg) {
                    eprintln!("pcoll-sim: cannot write {output}: {e}");
                    std::process::exit(1);
                }
                println!("wrote {output}");
            }
            Err(e) => {
                eprintln!("pcoll-sim: {e}");
                std::process::exit(2);
            }
        },
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
        } => choose_cmd(
            &table,
            mpi,
            &collective,
            &p,
            &bytes,
            &op,
            &format,
            (ppn, nodes),
        ),
        Cmd::Scale {
            table,
            mpi,
            p,
            bytes,
            output,
        } => {
            let t = choose::load_table(&table, mpi).unwrap_or_else(|e| fail(e));
            let ps = choose::parse_p_list(&p).unwrap_or_else(|e| fail(e));
            let sizes = pcoll::tuning::size::parse_size_list(&bytes)
                .unwrap_or_else(|e| fail(format!("--bytes: {e}")));
            let svg = scale::svg(&env_config(), &t, mpi, &ps, &sizes);
            if let Err(e) = std::fs::write(&output, svg) {
                fail(format!("cannot write {output}: {e}"));
            }
            println!("wrote {output}");
        }
        Cmd::Schedule { p, blocks, format } => {
            if p == 0 {
                eprintln!("pcoll-sim schedule: --p must be at least 1");
                std::process::exit(2);
            }
            match format.as_str() {
                "json" => println!("{}", pcoll::sched::circulant::schedule_json(p, blocks)),
                "table" => print!("{}", pcoll::sched::circulant::schedule_table(p)),
                other => {
                    eprintln!(
                        "pcoll-sim schedule: unknown --format '{other}' (accepted: json, table)"
                    );
                    std::process::exit(2);
                }
            }
        }
    }
}

fn predict_cmd(coll: Collective, p: usize, bytes: usize, c: &CostParams, duplex: Duplex) {
    println!(
        "{coll}, p = {p}, {bytes} bytes, alpha = {:e} s, beta = {:e} s/B, gamma = {:e} s/B, {:?}-duplex",
        c.alpha, c.beta, c.gamma, duplex
    );
    let lb = lower_bound(coll, p, bytes, c, duplex);
    let mut rows: Vec<(Scheme, Prediction)> = Scheme::ALL
        .iter()
        .map(|&s| (s, predict_scheme(coll, s, p, bytes, c, duplex)))
        .filter(|(_, pr)| pr.time.is_finite())
        .collect();
    rows.sort_by(|a, b| a.1.time.total_cmp(&b.1.time));
    println!(
        "{:<12} {:>9} {:>14} {:>9}",
        "algorithm", "segments", "time [s]", "/bound"
    );
    for (s, pr) in rows {
        println!(
            "{:<12} {:>9} {:>14.6e} {:>9.3}",
            s.name(),
            pr.segments,
            pr.time,
            if lb > 0.0 { pr.time / lb } else { 1.0 }
        );
    }
    println!("{:<12} {:>9} {:>14.6e}", "lower bound", "", lb);
}

fn cp((alpha, beta, gamma): (f64, f64, f64)) -> CostParams {
    CostParams { alpha, beta, gamma }
}

fn paper() {
    let r = Collective::Reduce;
    // ---------------------------------------------------------------- LL Figure 4a
    let c = cp(LL_FIG45);
    println!("== Lowery–Langou Figure 4a: unidirectional, p = 64, alpha = 10, beta = 1, gamma = 0");
    println!(
        "   time of each algorithm / time of uni-greedy (best segment count each; greedy over"
    );
    println!("   powers of two as in the paper's experiments, the others over all integers)");
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>12} {:>6}",
        "m [B]", "binomial", "pipeline", "binary", "uni-greedy", "nseg"
    );
    let std3 = [Scheme::Binomial, Scheme::Pipeline, Scheme::Binary];
    let mut best_ratio = (0.0, 0);
    for k in 2..=16 {
        let m = 1usize << k;
        let g = predict_scheme(r, Scheme::GreedyUni, 64, m, &c, Duplex::Half);
        let t: Vec<f64> = std3
            .iter()
            .map(|&s| predict_scheme(r, s, 64, m, &c, Duplex::Half).time)
            .collect();
        let best = t.iter().cloned().fold(f64::INFINITY, f64::min);
        if best / g.time > best_ratio.0 {
            best_ratio = (best / g.time, m);
        }
        println!(
            "{:>8} {:>10.3} {:>10.3} {:>10.3} {:>12.1} {:>6}",
            m,
            t[0] / g.time,
            t[1] / g.time,
            t[2] / g.time,
            g.time,
            g.segments
        );
    }
    println!(
        "   paper: equal to binomial for small m, pipeline approaches it for large m, up to about\n   1.5x faster than the best standard algorithm in between. Here: best standard / greedy\n   peaks at {:.3} (m = {} B).\n",
        best_ratio.0, best_ratio.1
    );

    // ---------------------------------------------------------------- LL Figure 5
    println!("== Lowery–Langou Figure 5: best standard (binomial, pipeline, binary) / uni-greedy,");
    println!("   alpha = 10, beta = 1, gamma = 0; rows p, columns m = 2^k bytes");
    let mut head = format!("{:>6}", "p\\k");
    for k in 2..=16 {
        let _ = write!(head, " {:>5}", k);
    }
    println!("{head}");
    let mut peak = (0.0, 0, 0);
    for pk in 2..=10 {
        let p = 1usize << pk;
        let mut line = format!("{:>6}", p);
        for k in 2..=16 {
            let m = 1usize << k;
            let g = predict_scheme(r, Scheme::GreedyUni, p, m, &c, Duplex::Half).time;
            let best = std3
                .iter()
                .map(|&s| predict_scheme(r, s, p, m, &c, Duplex::Half).time)
                .fold(f64::INFINITY, f64::min);
            let ratio = best / g;
            if ratio > peak.0 {
                peak = (ratio, p, m);
            }
            let _ = write!(line, " {:>5.2}", ratio);
        }
        println!("{line}");
    }
    println!(
        "   paper: ratio about 1.5 for medium m, the region widening with p. Here: peak {:.3} at\n   p = {}, m = {} B.\n",
        peak.0, peak.1, peak.2
    );

    // ---------------------------------------------------------------- LL Figure 6
    let c6 = cp(LL_FIG6);
    println!(
        "== Lowery–Langou Figure 6: bidirectional, p = 64, alpha = 50000, beta = 6, gamma = 1"
    );
    println!("   time / time of bi-greedy; reference = sum of per-term lower bounds");
    println!(
        "{:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>13} {:>5}",
        "m", "binomial", "pipeline", "binary", "butterfly", "reference", "bi-greedy", "nseg"
    );
    let std4 = [
        Scheme::Binomial,
        Scheme::Pipeline,
        Scheme::Binary,
        Scheme::Butterfly,
    ];
    let mut mid = Vec::new();
    for k in (10..=24).step_by(1) {
        let m = 1usize << k;
        let g = predict_scheme(r, Scheme::Greedy, 64, m, &c6, Duplex::Full);
        let t: Vec<f64> = std4
            .iter()
            .map(|&s| predict_scheme(r, s, 64, m, &c6, Duplex::Full).time)
            .collect();
        let lb = lower_bound(r, 64, m, &c6, Duplex::Full);
        let best3 = t[..3].iter().cloned().fold(f64::INFINITY, f64::min);
        if (200 * 1024..=4000 * 1024).contains(&m) {
            mid.push(best3 / g.time);
        }
        println!(
            "{:>9} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>13.4e} {:>5}",
            m,
            t[0] / g.time,
            t[1] / g.time,
            t[2] / g.time,
            t[3] / g.time,
            lb / g.time,
            g.time,
            g.segments
        );
    }
    let (lo, hi) = mid
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    println!(
        "   paper: bi-greedy = binomial below ~10 KB, \"approximately a 50% increase in performance\"\n   over binomial/binary/pipeline for 200 KB < m < 4000 KB, pipeline approaching it for very\n   large m; butterfly good near 300 KB only. Here, for 200K <= m <= 4000K: best of\n   binomial/pipeline/binary / bi-greedy in [{lo:.3}, {hi:.3}] (binary is exactly 2x in this model:\n   2(N+n-2) vs ceil(log2 p)+n-1 rounds with N-2 = ceil(log2 p)-1 for p = 64).\n"
    );

    // ---------------------------------------------------------------- bi-greedy conjecture
    println!("== Bi-greedy conjecture: completion = (ceil(log2 p) + nseg - 1)(tcomm + tcomp)");
    let start = std::time::Instant::now();
    let (mut cases, mut bad) = (0, Vec::new());
    let pairs = [(1, 0), (2, 1), (1, 1), (3, 1), (3, 2), (2, 0)];
    for p in (2..=64).chain([100, 128, 129]) {
        let nmax = if p > 70 { 6 } else { 12 };
        for nseg in 1..=nmax {
            for &(tc, tp) in &pairs {
                let s = bi_greedy(p, 0, nseg, tc, tp);
                cases += 1;
                if s.completion != bi_greedy_conjecture(p, nseg, tc, tp) {
                    bad.push((p, nseg, tc, tp, s.completion));
                }
            }
        }
    }
    println!(
        "   p = 2..64, 100, 128, 129; nseg = 1..12 (1..6 for p > 70); (tcomm,tcomp) in {pairs:?}\n   {cases} cases, {} counterexamples {:?} ({:.2?})\n",
        bad.len(),
        &bad[..bad.len().min(5)],
        start.elapsed()
    );

    // ---------------------------------------------------------------- RT Table 1
    println!("== Rabenseifner–Träff Table 1 (alpha = 1; S: beta*m = 0.1, gamma*m = 0.01; M: x10; L: x100; XL: x1000)");
    println!(
        "{:>3} {:>3} | {:>22} | {:>22} | {:>22} | {:>22}",
        "p", "m", RT_PROTOCOLS[0], RT_PROTOCOLS[1], RT_PROTOCOLS[2], RT_PROTOCOLS[3]
    );
    let cells = rt_table1_cells();
    let mut notes = Vec::new();
    for row in cells.chunks(4) {
        let mut line = format!("{:>3} {:>3}", row[0].p, row[0].size);
        for cell in row {
            let mark = if cell.matches { ' ' } else { '!' };
            let _ = write!(
                line,
                " | {:>9.3} paper {:>5}{}",
                cell.computed, cell.printed, mark
            );
            if !cell.matches {
                notes.push(format!(
                    "   ! p = {}, {}, {}: paper {} vs {:.4}: {}",
                    cell.p,
                    cell.size,
                    RT_PROTOCOLS[cell.protocol],
                    cell.printed,
                    cell.computed,
                    cell.note
                ));
            }
        }
        println!("{line}");
    }
    for n in &notes {
        println!("{n}");
    }
    println!(
        "   (ALGORITHMS.md §8.11: the p = 63 elimination lat.-opt. column uses ceil(log2 p) instead of\n   ceil(log2 p)+1 for the beta term in all four sizes; the remaining differences are in the last\n   printed digit.)\n"
    );

    // ---------------------------------------------------------------- Träff p = 17
    traff_p17();
}

/// A Gantt chart of a reduction schedule as SVG text.
fn draw(alg: &str, p: usize, nseg: usize, tcomm: u64, tcomp: u64) -> Result<String, String> {
    if p == 0 || nseg == 0 || tcomm == 0 {
        return Err("need p >= 1, segments >= 1, tcomm >= 1".into());
    }
    let (tc, tp) = (tcomm as f64, tcomp as f64);
    let (title, total, ev): (String, f64, Vec<(f64, usize, usize, usize)>) = match alg {
        "greedy" => {
            let s = bi_greedy(p, 0, nseg, tcomm, tcomp);
            (
                format!(
                    "bi-greedy, p = {p}, {nseg} segments, tcomm = {tcomm}, tcomp = {tcomp}: T = {} (conjecture {})",
                    s.completion,
                    bi_greedy_conjecture(p, nseg, tcomm, tcomp)
                ),
                s.completion as f64,
                s.tuples(),
            )
        }
        "greedy_uni" => {
            let s = uni_greedy(
                p,
                0,
                &vec![
                    SegCost {
                        tcomm: tc,
                        tcomp: tp
                    };
                    nseg
                ],
            );
            (
                format!("uni-greedy (half-duplex), p = {p}, {nseg} segments, tcomm = {tcomm}, tcomp = {tcomp}: T = {}", s.completion),
                s.completion,
                s.tuples(),
            )
        }
        "pipeline" | "binary" => {
            let par = if alg == "pipeline" {
                chain_parents(p, 0, true)
            } else {
                binary_parents(p, 0)
            };
            let (t, ev) = simulate_tree_events(&par, nseg, tc, tp, Duplex::Full);
            (
                format!("{alg} (full-duplex), p = {p}, {nseg} segments, tcomm = {tcomm}, tcomp = {tcomp}: T = {t}"),
                t,
                ev,
            )
        }
        _ => {
            return Err(format!(
                "unknown algorithm '{alg}' (accepted: greedy, greedy_uni, pipeline, binary)"
            ))
        }
    };
    let _ = ceil_log2(p);
    let unit = (900.0 / total.max(1.0)).clamp(4.0, 60.0);
    let (left, top, rowh) = (60.0, 40.0, 22.0);
    let width = left + total * unit + 20.0;
    let height = top + p as f64 * rowh + 40.0;
    let colour = |j: usize| format!("hsl({}, 70%, 55%)", (j * 137) % 360);
    let dark = |j: usize| format!("hsl({}, 70%, 30%)", (j * 137) % 360);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="18" font-size="13">{title}</text>"#
    );
    for r in 0..p {
        let y = top + r as f64 * rowh;
        let _ = writeln!(
            s,
            r#"<text x="8" y="{:.1}">rank {r}</text>"#,
            y + rowh * 0.65
        );
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/>"##,
            y + rowh,
            width - 20.0,
            y + rowh
        );
    }
    for t in 0..=(total.ceil() as usize) {
        let x = left + t as f64 * unit;
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#f0f0f0"/>"##,
            top + p as f64 * rowh
        );
        if t % 5 == 0 {
            let _ = writeln!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{t}</text>"#,
                top + p as f64 * rowh + 14.0
            );
        }
    }
    let rect = |s: &mut String, row: usize, t0: f64, t1: f64, fill: &str, extra: &str| {
        let y = top + row as f64 * rowh + 3.0;
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}" {extra}/>"#,
            left + t0 * unit,
            ((t1 - t0) * unit).max(0.5),
            rowh - 6.0
        );
    };
    for &(t, a, b, j) in &ev {
        // sender: outlined bar with an end strip; receiver: solid bar, then darker reduction
        rect(
            &mut s,
            a,
            t,
            t + tc,
            "white",
            &format!(r#"stroke="{}" stroke-width="2""#, colour(j)),
        );
        rect(&mut s, a, t + tc - 0.2, t + tc, &colour(j), "");
        rect(&mut s, b, t, t + tc, &colour(j), "");
        if tp > 0.0 {
            rect(&mut s, b, t + tc, t + tc + tp, &dark(j), "");
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="9">{}</text>"#,
            left + t * unit + 2.0,
            top + a as f64 * rowh + rowh * 0.62,
            b
        );
    }
    let _ = writeln!(s, "</svg>");
    Ok(s)
}

/// Träff's Table 1 (p = 17) as printed (ALGORITHMS.md §9): rows R0..R4 then S0..S4, columns
/// r = 0..16.
const TRAFF_P17: [[i64; 17]; 10] = [
    [
        -4, 0, -5, -4, -3, -5, -2, -5, -4, -3, -1, -5, -4, -3, -5, -2, -5,
    ],
    [
        -5, -4, 1, -5, -4, -3, -3, -2, -5, -4, -3, -1, -5, -4, -3, -3, -2,
    ],
    [
        -2, -2, -2, 2, 0, -4, -4, -3, -2, -2, -4, -3, -1, -1, -4, -4, -3,
    ],
    [
        -1, -3, -3, -2, -2, 3, 0, 1, 2, -5, -2, -2, -2, -2, -1, -1, -1,
    ],
    [-3, -1, -1, -1, -1, -1, -1, -1, -1, 4, 0, 1, 2, 0, 3, 0, 1],
    [
        0, -5, -4, -3, -5, -2, -5, -4, -3, -1, -5, -4, -3, -5, -2, -5, -4,
    ],
    [
        1, -5, -4, -3, -3, -2, -5, -4, -3, -1, -5, -4, -3, -3, -2, -5, -4,
    ],
    [
        2, 0, -4, -4, -3, -2, -2, -4, -3, -1, -1, -4, -4, -3, -2, -2, -2,
    ],
    [
        3, 0, 1, 2, -5, -2, -2, -2, -2, -1, -1, -1, -1, -3, -3, -2, -2,
    ],
    [4, 0, 1, 2, 0, 3, 0, 1, -3, -1, -1, -1, -1, -1, -1, -1, -1],
];

fn traff_p17() {
    use pcoll::sched::circulant::{recv_schedule, send_schedule};
    println!("== Träff circulant schedules, p = 17 (paper Table 1 vs computed; O(log p) per rank)");
    let p = 17;
    let ours: Vec<(Vec<i64>, Vec<i64>)> = (0..p)
        .map(|r| (recv_schedule(p, r), send_schedule(p, r)))
        .collect();
    let mut same = 0;
    for (row, printed) in TRAFF_P17.iter().enumerate() {
        let (kind, k) = if row < 5 { ("R", row) } else { ("S", row - 5) };
        let got: Vec<i64> = ours
            .iter()
            .map(|(r, s)| if row < 5 { r[k] } else { s[k] })
            .collect();
        let fmt = |v: &[i64]| {
            v.iter()
                .map(|x| format!("{x:3}"))
                .collect::<Vec<_>>()
                .join("")
        };
        let ok = got.as_slice() == printed.as_slice();
        same += usize::from(ok);
        println!("   {kind}{k} paper   {}", fmt(printed));
        println!(
            "   {kind}{k} pcoll   {}  {}",
            fmt(&got),
            if ok { "same" } else { "DIFFERS" }
        );
    }
    println!("   {same} of 10 rows identical to the printed table");
}
