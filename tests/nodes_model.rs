//! The two-level model and the node-aware decisions: a communicator on one node is decided
//! exactly as without node facts, one rank per node too but for the chain taken within its
//! tie (`CHAIN_TIE`); over several nodes the model weighs `hier`
//! / `hier_ml`; `[model.net]` parses, round-trips and is checked; a non-commutative op over
//! interleaved nodes never gets a node-aware algorithm.

use pcoll::algo::{Algorithm, Collective};
use pcoll::config::Config;
use pcoll::decide::{model, CallFacts, PlainFacts, Resolver};
use pcoll::model::native::Mpi;
use pcoll::nodes::NodeShape;
use pcoll::tuning::Table;
use proptest::prelude::*;
use std::collections::HashMap;

/// This machine's shared memory inside a node, a 500 Mbit/s link between nodes.
const NET: &str = "[model]\nalpha = 1.4e-6\nbeta = 7.7e-11\ngamma = 1.3e-11\n\n[model.net]\nalpha = 3.0e-5\nbeta = 1.6e-8\n";

fn net_table() -> Table {
    Table::parse(NET, "net.toml").unwrap()
}

fn with_nodes(
    coll: Collective,
    p: usize,
    bytes: usize,
    commutative: bool,
    nodes: NodeShape,
) -> CallFacts {
    CallFacts {
        commutative,
        nodes,
        ..CallFacts::new(coll, p, bytes)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]
    /// One node, or one rank per node: the decision is the one without node facts (but never
    /// `shm` over several nodes, and over several nodes `pipeline` where the model prices it
    /// within `CHAIN_TIE` of the pcoll algorithm chosen without them).
    #[test]
    fn single_node_decisions_unchanged(
        ci in 0usize..4, p in 1usize..5000, lg in 0u32..28, commutative: bool, mpich: bool,
        one_rank in any::<bool>(),
    ) {
        let coll = Collective::ALL[ci];
        let bytes = 1usize << lg;
        let mpi = if mpich { Mpi::Mpich } else { Mpi::OpenMpi };
        let cfg = Config::default();
        for table in [Table::builtin_for(mpi), net_table()] {
            let r = Resolver::new(&cfg, &table, mpi);
            let shape = if one_rank {
                NodeShape { nodes: p, min_ppn: 1, max_ppn: 1, contiguous: true }
            } else {
                NodeShape::blocks(p, p)
            };
            let plain = r.resolve(&with_nodes(coll, p, bytes, commutative, NodeShape::default()), &PlainFacts).unwrap();
            let nodes = r.resolve(&with_nodes(coll, p, bytes, commutative, shape), &PlainFacts).unwrap();
            let chain = shape.nodes > 1
                && plain.by_model
                && nodes.algorithm == Algorithm::Pipeline
                && ![Algorithm::Native, Algorithm::Pipeline, Algorithm::Shm].contains(&plain.algorithm);
            if plain.algorithm == Algorithm::Shm && shape.nodes > 1 {
                // `shm` serves one node only (CallFacts::shm_ok): one rank per node decides
                // without it.
                prop_assert_ne!(nodes.algorithm, Algorithm::Shm);
            } else if chain {
                // The model's span representative is not `bytes` itself: price both at the
                // class's sizes and accept the chain within the tie at one of them.
                let k = model::class_of(bytes);
                let within = [model::class_lo(k), bytes, model::class_lo(k + 1).max(bytes + 1) - 1]
                    .iter()
                    .any(|&b| {
                        let (prices, _) = model::prices(mpi, &table.model(), coll, p, b, commutative);
                        let t = |a| prices.iter().find(|x| x.0 == a).map(|x| x.1);
                        matches!((t(Algorithm::Pipeline), t(plain.algorithm)),
                            (Some(tc), Some(tb)) if tc <= model::CHAIN_TIE * tb)
                    });
                prop_assert!(within, "pipeline over nodes, {:?} without: not within the tie", plain.algorithm);
            } else {
                prop_assert_eq!(plain, nodes);
            }
        }
    }
}

#[test]
fn model_picks_node_aware_over_a_slow_link() {
    let t = net_table();
    let cfg = Config::default();
    let r = Resolver::new(&cfg, &t, Mpi::Mpich);
    let shape = NodeShape::blocks(64 * 32, 32);
    for coll in [Collective::Allreduce, Collective::Reduce] {
        let d = r.model_pick(&with_nodes(coll, 2048, 16 << 20, true, shape));
        assert!(d.best.node_aware(), "{coll}: {:?}", d);
    }
    // 2 nodes x 2 ranks, 4 MiB allreduce: hier_ml (the link carries m, ring 1.5m).
    let d = r.model_pick(&with_nodes(
        Collective::Allreduce,
        4,
        4 << 20,
        true,
        NodeShape::blocks(4, 2),
    ));
    assert!(d.best.node_aware(), "{d:?}");
}

#[test]
fn non_commutative_over_interleaved_nodes_declines() {
    let t = net_table();
    let mut m = HashMap::new();
    m.insert("PCOLL_ALLREDUCE".to_string(), "hier_ml".to_string());
    let (cfg, w) = Config::from_map(&m);
    assert!(w.is_empty());
    let r = Resolver::new(&cfg, &t, Mpi::OpenMpi);
    let interleaved = NodeShape {
        nodes: 2,
        min_ppn: 2,
        max_ppn: 2,
        contiguous: false,
    };
    let d = r
        .resolve(
            &with_nodes(Collective::Allreduce, 4, 1 << 20, false, interleaved),
            &PlainFacts,
        )
        .unwrap();
    assert!(d.fallback.is_some() && !d.algorithm.node_aware(), "{d:?}");
    let d = r
        .resolve(
            &with_nodes(Collective::Allreduce, 4, 1 << 20, true, interleaved),
            &PlainFacts,
        )
        .unwrap();
    assert_eq!(d.algorithm, Algorithm::HierMl);
    // The model never offers one either.
    let m = r.model_pick(&with_nodes(
        Collective::Allreduce,
        2048,
        16 << 20,
        false,
        NodeShape {
            contiguous: false,
            ..NodeShape::blocks(2048, 32)
        },
    ));
    assert!(!m.best.node_aware() && !m.best_pcoll.node_aware());
}

#[test]
fn model_net_section() {
    let t = net_table();
    assert_eq!(t.model_net().beta, 1.6e-8);
    assert_eq!(t.model_net().gamma, 1.3e-11, "unset keys are [model]'s");
    let again = Table::parse(&t.to_toml(), "again.toml").unwrap();
    assert_eq!(again, t);
    assert_eq!(
        Table::builtin().model_net(),
        Table::builtin().model(),
        "one level when absent"
    );
    let bad = Table::parse(
        "[model]\nalpha = 1e-6\n[model.net]\nbeta = -1.0\n",
        "bad.toml",
    )
    .unwrap_err();
    assert!(bad.contains("[model.net] beta"), "{bad}");
    assert!(Table::parse("[model.net]\nbogus = 1\n", "x.toml").is_err());
}
