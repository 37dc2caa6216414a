//! `pcoll-sim choose`: the decision for any cell, from the resolver the library runs
//! ([`pcoll::decide::Resolver`]), with every priced option beside it.

use pcoll::algo::{CallSpec, Collective, CostParams};
use pcoll::config::Config;
use pcoll::decide::{model, CallFacts, Decision, PlainFacts, Resolver};
use pcoll::model::native::Mpi;
use pcoll::model::nodes::{flat_params, Levels};
use pcoll::nodes::NodeShape;
use pcoll::tuning::size::parse_size_list;
use pcoll::tuning::Table;
use serde_json::{json, Map, Value};

/// One evaluated cell.
pub struct Cell {
    pub coll: Collective,
    pub p: usize,
    pub bytes: usize,
    pub commutative: bool,
    /// A reduce's or bcast's root (a table rule may read it: `root = "nonzero"`).
    pub root: usize,
    pub decision: Decision,
    /// Segment bytes the algorithm uses (None: no segments).
    pub segment: Option<usize>,
    /// Every priced pcoll algorithm, seconds, at exactly `bytes`.
    pub prices: Vec<(&'static str, f64)>,
    /// Native's own algorithm and predicted seconds.
    pub native: (&'static str, f64),
}

impl Cell {
    /// Predicted seconds of the decision.
    pub fn chosen_time(&self) -> f64 {
        let name = self.decision.algorithm.name();
        if name == "native" {
            return self.native.1;
        }
        self.prices
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(f64::NAN, |x| x.1)
    }
    /// The cheapest priced option (native included).
    pub fn best(&self) -> (&'static str, f64) {
        self.prices
            .iter()
            .copied()
            .chain([("native", self.native.1)])
            .fold(
                ("none", f64::INFINITY),
                |b, x| if x.1 < b.1 { x } else { b },
            )
    }
}

/// The table named on the command line: a file, or `builtin` (the one embedded for `mpi`).
pub fn load_table(spec: &str, mpi: Mpi) -> Result<Table, String> {
    if spec == "builtin" {
        return Ok(Table::builtin_for(mpi));
    }
    let text = std::fs::read_to_string(spec).map_err(|e| format!("cannot read {spec}: {e}"))?;
    Table::parse(&text, spec)
}

/// Communicator sizes: comma-separated values and `lo..hi` (powers of two in between).
pub fn parse_p_list(s: &str) -> Result<Vec<usize>, String> {
    let v = parse_size_list(s).map_err(|e| format!("--p: {e}"))?;
    if v.contains(&0) {
        return Err("--p: communicator sizes start at 1".into());
    }
    Ok(v)
}

/// Evaluates one cell with the library's resolver (environment overrides included).
pub fn cell(
    cfg: &Config,
    table: &Table,
    mpi: Mpi,
    coll: Collective,
    p: usize,
    bytes: usize,
    commutative: bool,
) -> Result<Cell, String> {
    cell_on(
        cfg,
        table,
        mpi,
        (coll, p, bytes, commutative),
        (0, false, 0),
    )
}

/// [`cell`] on nodes of `ppn` consecutive ranks (0: nodes not given, one node; 1: every rank
/// a node of its own, one level of network, where `shm` cannot serve, as in the library);
/// `crowded`: some node runs more ranks than cores, as the library agrees at `MPI_Init`
/// ([`Resolver::crowded`]); `root`: a reduce's or bcast's root (0 for the others).
pub fn cell_on(
    cfg: &Config,
    table: &Table,
    mpi: Mpi,
    (coll, p, bytes, commutative): (Collective, usize, usize, bool),
    (ppn, crowded, root): (usize, bool, usize),
) -> Result<Cell, String> {
    let root = if coll.has_root() { root } else { 0 };
    if root >= p {
        return Err(format!("--root {root}: not a rank of p = {p}"));
    }
    let nodes = if ppn >= 1 {
        NodeShape::blocks(p, ppn)
    } else {
        NodeShape::default()
    };
    let call = CallFacts {
        commutative,
        nodes,
        root,
        ..CallFacts::new(coll, p, bytes)
    };
    let decision = Resolver::new(cfg, table, mpi)
        .with_crowded(crowded)
        .resolve(&call, &PlainFacts)
        .map_err(|e| e.to_string())?;
    let params = table.model();
    let (prices, native) = if nodes.multi() {
        let levels = Levels {
            intra: params,
            inter: table.model_net(),
            node_shm: true,
        };
        let np = flat_params(&levels, &nodes, pcoll::Algorithm::Native);
        (
            model::node_prices(&levels, coll, p, bytes, commutative, &nodes),
            pcoll::model::native::native(mpi, coll, p, bytes, commutative, &np),
        )
    } else {
        let mut flat = model::prices(mpi, &params, coll, p, bytes, commutative);
        if !call.shm_ok() {
            flat.0.retain(|(a, _)| *a != pcoll::Algorithm::Shm);
        }
        flat
    };
    let alg = decision.algorithm;
    let segment = pcoll::segment::uses_segment(alg, coll).then(|| {
        if decision.segment > 0 {
            decision.segment
        } else {
            model_segment(coll, alg, p, bytes, &params).unwrap_or(0)
        }
    });
    Ok(Cell {
        coll,
        p,
        bytes,
        commutative,
        root,
        decision,
        segment,
        prices: prices.into_iter().map(|(a, t)| (a.name(), t)).collect(),
        native: (native.algorithm, native.time),
    })
}

/// The segment bytes the builders take from the cost model for this call (one-byte elements,
/// equal counts).
fn model_segment(
    coll: Collective,
    alg: pcoll::Algorithm,
    p: usize,
    bytes: usize,
    params: &CostParams,
) -> Option<usize> {
    let counts = match coll {
        Collective::Reduce | Collective::Allreduce => vec![bytes],
        _ => (0..p)
            .map(|j| bytes / p + usize::from(j < bytes % p))
            .collect(),
    };
    let spec = CallSpec {
        coll,
        p,
        rank: 0,
        root: 0,
        counts,
        displs: vec![],
        commutative: true,
        elem_bytes: 1,
        seg_elems: 0,
        params: *params,
        in_place: false,
    };
    pcoll::segment::model_segment_bytes(alg, &spec)
}

/// One JSON object (a line of `--format json`).
pub fn to_json(c: &Cell, table: &Table, mpi: Mpi) -> Value {
    let mut pred = Map::new();
    for (n, t) in &c.prices {
        pred.insert((*n).into(), json!(t));
    }
    pred.insert("native".into(), json!(c.native.1));
    json!({
        "mpi": mpi.name(),
        "collective": c.coll.name(),
        "p": c.p,
        "bytes": c.bytes,
        "op": if c.commutative { "commutative" } else { "noncommutative" },
        "root": c.root,
        "algorithm": c.decision.algorithm.name(),
        "source": c.decision.source_label(table),
        "segment": c.segment,
        "defect": c.decision.defect.map(|d| d.name),
        "native_algorithm": c.native.0,
        "predicted_s": Value::Object(pred),
    })
}

/// The header and one row of `--format table`.
pub fn table_header() -> String {
    format!(
        "{:<15} {:>7} {:>11} {:<11} {:<28} {:>9} {:>11} {:<26} {:>11} {:>7}",
        "collective",
        "p",
        "bytes",
        "algorithm",
        "source",
        "segment",
        "predicted",
        "native (its algorithm)",
        "native",
        "/best"
    )
}

pub fn table_row(c: &Cell, table: &Table) -> String {
    let t = c.chosen_time();
    let best = c.best().1;
    format!(
        "{:<15} {:>7} {:>11} {:<11} {:<28} {:>9} {:>11.3e} {:<26} {:>11.3e} {:>7.3}",
        c.coll.name(),
        c.p,
        c.bytes,
        c.decision.algorithm.name(),
        c.decision.source_label(table),
        c.segment.map_or("-".to_string(), |s| s.to_string()),
        t,
        c.native.0,
        c.native.1,
        if best > 0.0 { t / best } else { 1.0 }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Intel MPI's table reads the root from 128 KiB (its native reduce to another root is
    /// another algorithm): `shm` unraced there, raced at root 0; below it both roots alike.
    #[test]
    fn a_rule_that_reads_the_root_shows_at_that_root() {
        let table = Table::builtin_for(Mpi::IntelMpi);
        let cfg = Config::default();
        let at = |bytes, root| {
            cell_on(
                &cfg,
                &table,
                Mpi::IntelMpi,
                (Collective::Reduce, 2, bytes, true),
                (0, false, root),
            )
            .unwrap()
            .decision
        };
        let (zero, one) = (at(1 << 20, 0), at(1 << 20, 1));
        assert_eq!(one.algorithm, pcoll::Algorithm::Shm);
        assert!(
            zero.source != one.source,
            "{:?} / {:?}",
            zero.source,
            one.source
        );
        assert_eq!(at(8, 0).algorithm, at(8, 1).algorithm);
        assert!(cell_on(
            &cfg,
            &table,
            Mpi::IntelMpi,
            (Collective::Reduce, 2, 8, true),
            (0, false, 2)
        )
        .is_err());
    }

    /// Four nodes of one rank each (`--nodes 4` at p = 4): `shm` can neither be chosen nor
    /// priced, as in the library, whose `shm` needs the communicator on one node; without
    /// nodes the same cell takes it (the built-in MPICH table's rule).
    #[test]
    fn one_rank_per_node_never_takes_shm() {
        let table = Table::builtin_for(Mpi::Mpich);
        let cfg = Config::default();
        let call = (Collective::Reduce, 4, 1 << 20, true);
        let one = cell_on(&cfg, &table, Mpi::Mpich, call, (0, false, 0)).unwrap();
        assert_eq!(one.decision.algorithm, pcoll::Algorithm::Shm);
        let four = cell_on(&cfg, &table, Mpi::Mpich, call, (1, false, 0)).unwrap();
        assert_ne!(four.decision.algorithm, pcoll::Algorithm::Shm);
        assert!(
            four.prices.iter().all(|(a, _)| *a != "shm"),
            "{:?}",
            four.prices
        );
    }
}
