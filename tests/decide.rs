//! The resolver (`pcoll::decide`): precedence, segments, fallbacks, `model`, the native-defect
//! list, the gate's native ranges, and the model's decisions at every scale.

use pcoll::algo::{Algorithm, Collective, Pick};
use pcoll::config::Config;
use pcoll::decide::defects::{self, Guard, DEFECTS};
use pcoll::decide::{model, CallFacts, Memo, NativeFacts, Overrides, PlainFacts, Resolver, Source};
use pcoll::model::native::Mpi;
use pcoll::tuning::{Rule, Table};
use pcoll::Error;
use proptest::prelude::*;
use std::collections::HashMap;

fn cfg(vars: &[(&str, &str)]) -> Config {
    let m: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (c, w) = Config::from_map(&m);
    assert!(w.is_empty(), "{w:?}");
    c
}

fn call(coll: Collective, p: usize, bytes: usize, commutative: bool) -> CallFacts {
    CallFacts {
        commutative,
        ..CallFacts::new(coll, p, bytes)
    }
}

fn table() -> Table {
    use Algorithm::*;
    Table::builder()
        .origin("test.toml")
        .rule(
            Collective::Reduce,
            Rule::new(Greedy).p(4..64).bytes(..65536),
        )
        .rule(
            Collective::Reduce,
            Rule::new(Pipeline).bytes(65536..).segment(16384),
        )
        .rule(Collective::Allreduce, Rule::new(Greedy))
        .rule(Collective::ReduceScatter, Rule::new(Ring).segment(4096))
        .build()
        .unwrap()
}

fn resolve(c: &Config, t: &Table, x: CallFacts) -> pcoll::decide::Decision {
    Resolver::new(c, t, Mpi::OpenMpi)
        .resolve(&x, &PlainFacts)
        .unwrap()
}

fn model_of(t: &Table, x: &CallFacts) -> Algorithm {
    Resolver::new(&Config::default(), t, Mpi::OpenMpi)
        .model_pick(x)
        .best
}

#[test]
fn precedence_runtime_env_table_model() {
    let t = table();
    let none = Config::default();
    let d = resolve(&none, &t, call(Collective::Reduce, 8, 1 << 20, true));
    assert_eq!(
        (d.algorithm, d.source, d.segment, d.by_model),
        (
            Algorithm::Pipeline,
            Source::Table { rule: 1, line: 0 },
            16384,
            false
        )
    );
    assert!(!d.warn && d.fallback.is_none() && d.defect.is_none());
    let d = resolve(&none, &t, call(Collective::Reduce, 8, 400, true));
    assert_eq!((d.algorithm, d.segment), (Algorithm::Greedy, 0));
    // No rule: the model decides (what `model_pick` says), and says so.
    let x = call(Collective::Reduce, 2, 400, true);
    let d = resolve(&none, &t, x);
    assert_eq!(
        (d.algorithm, d.source, d.by_model),
        (model_of(&t, &x), Source::NoRule, true)
    );
    assert_eq!(d.source_label(&t), "model");
    // The environment beats the table, for its own collective only.
    let c = cfg(&[("PCOLL_REDUCE", "native")]);
    let d = resolve(&c, &t, call(Collective::Reduce, 8, 1 << 20, true));
    assert_eq!((d.algorithm, d.source), (Algorithm::Native, Source::Env));
    assert_eq!(d.source_label(&t), "env");
    let d = resolve(&c, &t, call(Collective::Allreduce, 8, 100, true));
    assert_eq!(d.algorithm, Algorithm::Greedy);
    // Run time beats the environment.
    let r = Resolver::new(&c, &t, Mpi::OpenMpi).with_overrides(Overrides {
        algorithm: Some(Pick::Alg(Algorithm::Butterfly)),
        segment: None,
    });
    let d = r
        .resolve(&call(Collective::Reduce, 8, 1 << 20, true), &PlainFacts)
        .unwrap();
    assert_eq!(
        (d.algorithm, d.source),
        (Algorithm::Butterfly, Source::Runtime)
    );
    // `model` from the environment: the model's answer.
    let c = cfg(&[("PCOLL_ALLREDUCE", "model")]);
    assert_eq!(c.forced(Collective::Allreduce), Some(Pick::Model));
    let x = call(Collective::Allreduce, 8, 1 << 20, true);
    let d = resolve(&c, &t, x);
    assert_eq!(
        (d.algorithm, d.source, d.by_model),
        (model_of(&t, &x), Source::Env, true)
    );
    // Disable beats everything.
    let c = cfg(&[("PCOLL_REDUCE", "pipeline"), ("PCOLL_DISABLE", "1")]);
    let d = resolve(&c, &t, call(Collective::Reduce, 8, 1 << 20, false));
    assert_eq!(
        (d.algorithm, d.source),
        (Algorithm::Native, Source::Disabled)
    );
}

#[test]
fn model_rules_in_a_file() {
    let t = Table::parse(
        "[model]\nmargin = 0.3\n[[allreduce]]\np = [2, 3]\nalgorithm = \"native\"\n\
         [[allreduce]]\nalgorithm = \"model\"\n",
        "m.toml",
    )
    .unwrap();
    assert_eq!(t.margin(), 0.3);
    let x = call(Collective::Allreduce, 1000, 1 << 20, true);
    let d = resolve(&Config::default(), &t, x);
    assert!(d.by_model);
    assert_eq!(d.source_label(&t), "model (m.toml:6)");
    assert_eq!(d.algorithm, model_of(&t, &x));
    // A round trip keeps `model` and the margin.
    assert_eq!(Table::parse(&t.to_toml(), "again").unwrap(), t);
    // The margin is checked.
    let e = Table::parse("[model]\nmargin = 1.5\n", "bad.toml").unwrap_err();
    assert!(e.contains("margin") && e.contains("bad.toml:2"), "{e}");
}

#[test]
fn segment_precedence() {
    let t = table();
    let c = cfg(&[("PCOLL_SEGMENT", "1000")]);
    let d = resolve(&c, &t, call(Collective::Reduce, 8, 1 << 20, true));
    assert_eq!((d.algorithm, d.segment), (Algorithm::Pipeline, 1000));
    assert_eq!(d.seg_elems(4), 250);
    assert_eq!(d.seg_elems(3), 333);
    assert_eq!(d.seg_elems(4096), 1, "at least one element");
    let d = resolve(&c, &t, call(Collective::Allgatherv, 3, 12, true));
    assert_eq!(d.segment, 1000);
    let d = resolve(
        &Config::default(),
        &t,
        call(Collective::Allgatherv, 3, 12, true),
    );
    assert_eq!((d.segment, d.seg_elems(4)), (0, 0));
    // The rule's segment belongs to the rule's algorithm.
    let c = cfg(&[("PCOLL_REDUCE", "binomial")]);
    let d = resolve(&c, &t, call(Collective::Reduce, 8, 1 << 20, true));
    assert_eq!((d.algorithm, d.segment), (Algorithm::Binomial, 0));
    // Run time beats PCOLL_SEGMENT and the rule; 0 at run time means "not set".
    let big = call(Collective::Reduce, 8, 1 << 20, true);
    let seg = |c: &Config, b: Option<usize>| {
        Resolver::new(c, &t, Mpi::Mpich)
            .with_overrides(Overrides {
                algorithm: None,
                segment: b,
            })
            .resolve(&big, &PlainFacts)
            .unwrap()
            .segment
    };
    let none = Config::default();
    assert_eq!(seg(&none, None), 16384);
    assert_eq!(seg(&none, Some(4096)), 4096);
    let c = cfg(&[("PCOLL_SEGMENT", "1000")]);
    assert_eq!(seg(&c, Some(4096)), 4096);
    assert_eq!(seg(&c, Some(0)), 1000);
}

#[test]
fn fallbacks_go_to_the_model() {
    let t = table();
    // A table rule's greedy cannot serve a non-commutative op: the model chooses among the
    // eligible algorithms, without a warning.
    let x = call(Collective::Reduce, 8, 400, false);
    let d = resolve(&Config::default(), &t, x);
    assert_eq!(d.algorithm, model_of(&t, &x));
    assert!(d.algorithm.eligible(Collective::Reduce, false).is_ok());
    assert!(!d.warn && d.by_model);
    assert_eq!(d.fallback.as_ref().unwrap().asked, Algorithm::Greedy);
    let r = d.reason(&x, &t);
    for part in ["greedy", "commutative", "test.toml", "model"] {
        assert!(r.contains(part), "{part} missing in {r}");
    }
    // A forced one warns (PCOLL_FALLBACK=warn, the default).
    let c = cfg(&[("PCOLL_ALLREDUCE", "ring")]);
    let d = resolve(&c, &t, call(Collective::Allreduce, 8, 1 << 20, false));
    assert!(d.warn && d.fallback.is_some());
    assert!(d
        .reason(&call(Collective::Allreduce, 8, 1, false), &t)
        .contains("PCOLL_ALLREDUCE"));
    let c = cfg(&[("PCOLL_ALLREDUCE", "ring"), ("PCOLL_FALLBACK", "silent")]);
    let d = resolve(&c, &t, call(Collective::Allreduce, 8, 1 << 20, false));
    assert!(!d.warn && d.fallback.is_some());
    let c = cfg(&[("PCOLL_ALLREDUCE", "ring"), ("PCOLL_FALLBACK", "error")]);
    match Resolver::new(&c, &t, Mpi::OpenMpi)
        .resolve(&call(Collective::Allreduce, 8, 1 << 20, false), &PlainFacts)
    {
        Err(Error::Unsupported(m)) => {
            for part in ["ring", "commutative", "PCOLL_FALLBACK=error", "allreduce"] {
                assert!(m.contains(part), "{part} missing in {m}");
            }
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    // A table rule never raises an error, whatever the policy.
    let d = Resolver::new(&c, &t, Mpi::OpenMpi)
        .resolve(
            &call(Collective::ReduceScatter, 8, 1 << 20, false),
            &PlainFacts,
        )
        .unwrap();
    assert!(!d.warn && d.fallback.is_some());
    // Ring allgatherv has no op: no fallback.
    let c = cfg(&[("PCOLL_ALLGATHERV", "ring")]);
    let d = resolve(&c, &t, call(Collective::Allgatherv, 8, 1 << 20, false));
    assert_eq!((d.algorithm, d.fallback), (Algorithm::Ring, None));
    // Every decision passes its own precondition check.
    for coll in Collective::ALL {
        for commutative in [false, true] {
            for &forced in Algorithm::available(coll) {
                let c = Config {
                    force: {
                        let mut f = [None; Collective::ALL.len()];
                        f[coll.index()] = Some(Pick::Alg(forced));
                        f
                    },
                    ..Config::default()
                };
                let d = resolve(&c, &t, call(coll, 8, 1 << 12, commutative));
                assert!(d.algorithm.eligible(coll, commutative).is_ok());
                assert_eq!(
                    d.fallback.is_some(),
                    forced.eligible(coll, commutative).is_err()
                );
            }
        }
    }
}

struct Facts {
    holes: bool,
    tlb: bool,
    unequal: bool,
    displaced: bool,
}

impl NativeFacts for Facts {
    fn holes(&self) -> bool {
        self.holes
    }
    fn true_lb(&self) -> i64 {
        if self.tlb {
            4
        } else {
            0
        }
    }
    fn unequal_counts(&self) -> bool {
        self.unequal
    }
    fn displaced(&self) -> bool {
        self.displaced
    }
}

#[test]
fn native_defects_are_never_sent_to_native() {
    let native = Table::parse(
        "[[reduce]]\nalgorithm = \"native\"\n[[allreduce]]\nalgorithm = \"native\"\n\
         [[reduce_scatter]]\nalgorithm = \"native\"\n[[allgatherv]]\nalgorithm = \"native\"\n",
        "n.toml",
    )
    .unwrap();
    let none = Config::default();
    let all = Facts {
        holes: true,
        tlb: true,
        unequal: true,
        displaced: true,
    };
    let cases: [(Mpi, CallFacts, &str); 6] = [
        (
            Mpi::Mpich,
            CallFacts {
                root: 1,
                ..call(Collective::Reduce, 3, 4096, true)
            },
            "mpich-reduce-inplace-root",
        ),
        (
            Mpi::Mpich,
            call(Collective::ReduceScatter, 4, 64, false),
            "mpich-reduce-scatter-noncommutative-holes",
        ),
        (
            Mpi::Mpich,
            CallFacts {
                in_place: true,
                ..call(Collective::ReduceScatter, 4, 1 << 20, true)
            },
            "mpich-reduce-scatter-inplace-unequal",
        ),
        (
            Mpi::IntelMpi,
            CallFacts {
                in_place: true,
                ..call(Collective::ReduceScatter, 2, 400 << 10, true)
            },
            "impi-reduce-scatter-inplace-unequal",
        ),
        (
            Mpi::Mpich,
            call(Collective::Allgatherv, 1, 64, true),
            "mpich-allgatherv-one-rank",
        ),
        (
            Mpi::OpenMpi,
            call(Collective::Allreduce, 4, 64, true),
            "openmpi-allreduce-true-lb",
        ),
    ];
    for (mpi, x, name) in cases {
        let d = Resolver::new(&none, &native, mpi)
            .resolve(&x, &all)
            .unwrap();
        assert_eq!(d.defect.map(|d| d.name), Some(name));
        assert_ne!(d.algorithm, Algorithm::Native);
        assert!(d.algorithm.eligible(x.coll, x.commutative).is_ok());
        assert!(d.reason(&x, &native).contains(name));
        // The other MPI, or plain facts, or a shape just outside: native.
        let other = if mpi == Mpi::Mpich {
            Mpi::OpenMpi
        } else {
            Mpi::Mpich
        };
        let d = Resolver::new(&none, &native, other)
            .resolve(&x, &all)
            .unwrap();
        assert_eq!((d.algorithm, d.defect), (Algorithm::Native, None));
        // PCOLL_DISABLE still goes native.
        let off = cfg(&[("PCOLL_DISABLE", "1")]);
        let d = Resolver::new(&off, &native, mpi).resolve(&x, &all).unwrap();
        assert_eq!(d.algorithm, Algorithm::Native);
    }
    let plain = |mpi, x: CallFacts| {
        Resolver::new(&none, &native, mpi)
            .resolve(&x, &PlainFacts)
            .unwrap()
            .algorithm
    };
    let n = Algorithm::Native;
    assert_eq!(
        plain(
            Mpi::Mpich,
            CallFacts {
                root: 1,
                ..call(Collective::Reduce, 3, 2048, true)
            }
        ),
        n
    );
    assert_eq!(
        plain(Mpi::Mpich, call(Collective::Reduce, 3, 1 << 20, true)),
        n
    );
    assert_eq!(
        plain(Mpi::Mpich, call(Collective::ReduceScatter, 4, 64, false)),
        n
    );
    assert_eq!(
        plain(Mpi::OpenMpi, call(Collective::Allreduce, 4, 64, true)),
        n
    );
    // Intel MPI's in-place reduce_scatter at its rule's size, unequal counts: native.
    let at = CallFacts {
        in_place: true,
        ..call(Collective::ReduceScatter, 2, 64 << 10, true)
    };
    let d = Resolver::new(&none, &native, Mpi::IntelMpi).resolve(&at, &all);
    assert_eq!(d.unwrap().algorithm, n);
    // A one-rank allgatherv whose block is not displaced.
    assert_eq!(
        plain(Mpi::Mpich, call(Collective::Allgatherv, 1, 64, true)),
        n
    );
    // Members of the family checked free of a defect keep native for its shape.
    let agv = call(Collective::Allgatherv, 1, 64, true);
    let root1 = CallFacts {
        root: 1,
        ..call(Collective::Reduce, 3, 4096, true)
    };
    for (mpi, x, guard) in [
        (Mpi::Mpich5, agv, Guard::OneRank),
        (Mpi::IntelMpi, agv, Guard::OneRank),
        (Mpi::Mpich5, root1, Guard::RootNonzeroAbove(2048)),
    ] {
        assert_eq!(plain(mpi, x), n, "{mpi:?} {}", x.coll);
        assert!(defects::guards(mpi, x.coll).all(|g| g != guard), "{mpi:?}");
    }
    // Every defect has a guard the gate checks, and one per (MPI, collective) is listed.
    for d in &DEFECTS {
        assert!(defects::guards(d.mpi, d.coll).any(|g| g == d.guard));
    }
}

/// The gate's ranges equal the resolver size by size: at every cut point, its neighbours,
/// and a spread of sizes, for measured and `model` tables, forced or not, several p, on a
/// crowded node or not.
#[test]
fn native_ranges_match_resolve() {
    let tables = [
        Table::builtin_for(Mpi::OpenMpi),
        Table::builtin_for(Mpi::Mpich),
        Table::parse(
            "[[reduce]]\np = [2, 4]\nbytes = [0, \"4KiB\"]\nalgorithm = \"native\"\n\
             [[reduce]]\nbytes = [\"1KiB\", \"64KiB\"]\nalgorithm = \"greedy\"\n\
             [[reduce]]\nbytes = [\"64KiB\", \"1MiB\"]\nalgorithm = \"model\"\n\
             [[allgatherv]]\np = [3]\nalgorithm = \"native\"\n\
             [[allgatherv]]\nbytes = [100, 200]\nalgorithm = \"native\"\n\
             [[allreduce]]\nform = \"nonblocking\"\nbytes = [\"1KiB\", \"8KiB\"]\nalgorithm = \"shm\"\n\
             [[allreduce]]\nform = \"blocking\"\nbytes = [\"2KiB\", \"16KiB\"]\nalgorithm = \"native\"\n",
            "t",
        )
        .unwrap(),
        // A learned table's reduce cells name the root: the ranges are root 0's.
        Table::parse(
            "[[reduce]]\np = [4, 5]\nbytes = [8, 16]\nroot = \"zero\"\nalgorithm = \"native\"\n\
             [[reduce]]\np = [4, 5]\nbytes = [64, 128]\nroot = \"zero\"\nalgorithm = \"native\"\n\
             [[reduce]]\nbytes = [0, 4096]\nalgorithm = \"binomial\"\n",
            "t",
        )
        .unwrap(),
        Table::builder().build().unwrap(),
    ];
    let mut sizes: Vec<usize> = (0..44).map(|k| 1usize << k).collect();
    sizes.extend([
        0, 1, 3, 99, 100, 101, 199, 200, 201, 1023, 1025, 65535, 65537,
    ]);
    let envs = [
        Config::default(),
        cfg(&[("PCOLL_REDUCE", "native"), ("PCOLL_ALLGATHERV", "binomial")]),
        cfg(&[("PCOLL_REDUCE", "model"), ("PCOLL_ALLREDUCE", "greedy")]),
    ];
    for t in &tables {
        for c in &envs {
            for (mpi, crowded) in Mpi::ALL.into_iter().flat_map(|m| [(m, false), (m, true)]) {
                let r = Resolver::new(c, t, mpi).with_crowded(crowded);
                for coll in Collective::ALL {
                    for (p, nb) in [1, 2, 3, 5, 8, 13, 64]
                        .into_iter()
                        .flat_map(|p| [(p, false), (p, true)])
                    {
                        let ranges = &r.native_ranges(coll, p)[nb as usize];
                        for w in ranges.windows(2) {
                            assert!(w[0].1 < w[1].0, "{coll} p={p}: not merged: {ranges:?}");
                        }
                        let mut probe = sizes.clone();
                        for &(lo, hi) in ranges.iter() {
                            for b in [lo, hi] {
                                probe.extend([b.saturating_sub(1), b, b.saturating_add(1)]);
                            }
                        }
                        for &b in probe.iter().filter(|&&b| b < (1 << 48)) {
                            let want = [true, false].iter().all(|&cm| {
                                let f = CallFacts {
                                    nonblocking: nb,
                                    ..call(coll, p, b, cm)
                                };
                                let d = r.resolve(&f, &PlainFacts);
                                matches!(d, Ok(d) if d.algorithm == Algorithm::Native && d.defect.is_none())
                            });
                            let got = ranges.iter().any(|&(lo, hi)| lo <= b && b < hi);
                            assert_eq!(
                                got,
                                want,
                                "{} {coll} p={p} bytes={b} nb={nb} crowded={crowded}",
                                t.origin()
                            );
                        }
                    }
                }
            }
        }
    }
}

/// On a crowded node the model's pcoll picks below 4 KiB give way to native (the reason says
/// so); from 4 KiB, and every rule that names an algorithm, decide as on an uncrowded node.
#[test]
fn crowded_nodes_keep_small_model_picks_native() {
    let t = Table::parse(
        "[[reduce]]\np = 4\nbytes = [0, \"2KiB\"]\nalgorithm = \"binomial\"\n",
        "t",
    )
    .unwrap();
    let c = Config::default();
    let mut given_way = 0;
    for mpi in Mpi::ALL {
        let r = Resolver::new(&c, &t, mpi);
        let crowded = r.with_crowded(true);
        for coll in Collective::ALL {
            for p in [3usize, 4, 5, 8] {
                for bytes in (0..20).map(|k| 1usize << k) {
                    let f = call(coll, p, bytes, true);
                    let (a, b) = (
                        r.resolve(&f, &PlainFacts).unwrap(),
                        crowded.resolve(&f, &PlainFacts).unwrap(),
                    );
                    let gives_way = a.by_model
                        && a.algorithm != Algorithm::Native
                        && a.defect.is_none()
                        && bytes < pcoll::learn::CROWDED_MIN_BYTES;
                    let what = format!(
                        "{mpi} {coll} p={p} {bytes} B: {} / {}",
                        a.algorithm, b.algorithm
                    );
                    if gives_way {
                        assert!(b.algorithm == Algorithm::Native && b.crowded, "{what}");
                        assert!(b.reason(&f, &t).contains("more ranks than cores"), "{what}");
                        given_way += 1;
                    } else {
                        assert!(b.algorithm == a.algorithm && !b.crowded, "{what}");
                    }
                }
            }
        }
        // The rule's own algorithm stays.
        let f = call(Collective::Reduce, 4, 64, true);
        assert_eq!(
            crowded.resolve(&f, &PlainFacts).unwrap().algorithm,
            Algorithm::Binomial
        );
    }
    assert!(
        given_way > 0,
        "the model picks a pcoll algorithm below 4 KiB somewhere"
    );
}

/// The memo gives the same answers as a fresh computation, with `shm` possible and refused
/// (a non-blocking call, a refused window) asked in turn: the two are kept apart.
#[test]
fn memo_agrees() {
    let t = Table::builder().build().unwrap();
    let c = Config::default();
    for p in [2, 7, 100] {
        let memo = Memo::new(p);
        for mpi in Mpi::ALL {
            let memo = Memo::new(p);
            let with = Resolver::new(&c, &t, mpi).with_memo(Some(&memo));
            let without = Resolver::new(&c, &t, mpi);
            for coll in Collective::ALL {
                for k in 0..40 {
                    for cm in [true, false] {
                        for refused in [false, true, false] {
                            let x = CallFacts {
                                shm_refused: refused,
                                ..call(coll, p, (1usize << k) + k, cm)
                            };
                            for _ in 0..2 {
                                assert_eq!(
                                    with.resolve(&x, &PlainFacts).unwrap(),
                                    without.resolve(&x, &PlainFacts).unwrap()
                                );
                            }
                        }
                    }
                }
            }
        }
        let _ = memo.p();
    }
}

/// The model prices every eligible algorithm and native at exactly `bytes`.
fn options(mpi: Mpi, t: &Table, x: &CallFacts) -> (f64, f64) {
    let (algs, native) = model::prices(mpi, &t.model(), x.coll, x.p, x.bytes, x.commutative);
    let best = algs
        .iter()
        .map(|a| a.1)
        .chain([native.time])
        .fold(f64::INFINITY, f64::min);
    let d = resolve_mpi(mpi, t, x);
    let chosen = if d == Algorithm::Native {
        native.time
    } else {
        algs.iter().find(|a| a.0 == d).expect("chosen is priced").1
    };
    (chosen, best)
}

fn resolve_mpi(mpi: Mpi, t: &Table, x: &CallFacts) -> Algorithm {
    Resolver::new(&Config::default(), t, mpi)
        .resolve(x, &PlainFacts)
        .unwrap()
        .algorithm
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    /// At any scale a `model` decision is predicted within 1.3x of the cheapest eligible
    /// option, native included (the size-class bound: 1.09 / (1 − 0.15) ≈ 1.28).
    #[test]
    fn model_decisions_within_1_3x_of_the_best(
        coll in 0usize..4,
        lp in 1u32..=20,
        pfrac in 0.0f64..1.0,
        lb in 0u32..=30,
        bfrac in 0.0f64..1.0,
        commutative in any::<bool>(),
        mpich in any::<bool>(),
    ) {
        let coll = Collective::ALL[coll];
        let p = ((1u64 << (lp - 1)) as f64 * (1.0 + pfrac)).round().max(1.0) as usize;
        let bytes = ((1u64 << lb) as f64 * (1.0 + bfrac)) as usize;
        let mpi = if mpich { Mpi::Mpich } else { Mpi::OpenMpi };
        let t = Table::builder().build().unwrap();
        let x = call(coll, p.min(1 << 20), bytes.min(1 << 30), commutative);
        let (chosen, best) = options(mpi, &t, &x);
        prop_assert!(chosen <= 1.3 * best + 1e-15, "{coll} p={} bytes={} chose {chosen} best {best}", x.p, x.bytes);
    }
}

/// The shipped tables never extrapolate: beyond the measured p (≤ 8 here) every cell is the
/// model's, and there it is within 1.3x of the cheapest option for both MPIs.
#[test]
fn builtin_tables_leave_unmeasured_p_to_the_model() {
    for mpi in Mpi::ALL {
        let t = Table::builtin_for(mpi);
        for coll in Collective::ALL {
            for lp in 4..=16 {
                for lb in (3..=28).step_by(2) {
                    let x = call(coll, 1 << lp, 1 << lb, true);
                    let d = Resolver::new(&Config::default(), &t, mpi)
                        .resolve(&x, &PlainFacts)
                        .unwrap();
                    assert!(
                        d.by_model,
                        "{mpi:?} {coll} p={} bytes={}: {:?}",
                        x.p, x.bytes, d.source
                    );
                    let (chosen, best) = options(mpi, &t, &x);
                    assert!(
                        chosen <= 1.3 * best,
                        "{mpi:?} {coll} p={} bytes={}",
                        x.p,
                        x.bytes
                    );
                }
            }
        }
    }
}

/// The model prices `shm` for a communicator on one node (bcast takes it at p = 16 with the
/// built-in tables, beyond the measured p), never once the communicator's
/// window was refused, never over several nodes; with a memo the answers are the same.
#[test]
fn model_picks_shm_on_one_node_only() {
    for mpi in Mpi::ALL {
        let t = Table::builtin_for(mpi);
        let cfg = Config::default();
        for coll in Collective::ALL {
            let memo = Memo::new(16);
            let r = Resolver::new(&cfg, &t, mpi).with_memo(Some(&memo));
            let mut took = false;
            for lb in 3..=24 {
                let x = call(coll, 16, 1 << lb, true);
                let d = r.resolve(&x, &PlainFacts).unwrap().algorithm;
                took |= d == Algorithm::Shm;
                let refused = CallFacts {
                    shm_refused: true,
                    ..x
                };
                assert_ne!(
                    r.resolve(&refused, &PlainFacts).unwrap().algorithm,
                    Algorithm::Shm,
                    "{mpi:?} {coll} 2^{lb} refused"
                );
                // The refusal did not spoil the memo.
                assert_eq!(r.resolve(&x, &PlainFacts).unwrap().algorithm, d);
                let nodes = CallFacts {
                    nodes: pcoll::nodes::NodeShape::blocks(16, 4),
                    ..x
                };
                assert_ne!(
                    r.resolve(&nodes, &PlainFacts).unwrap().algorithm,
                    Algorithm::Shm,
                    "{mpi:?} {coll} 2^{lb} on 4 nodes"
                );
            }
            // Bcast at p = 16: shm streams 2m once, native's binomial log2(p) times.
            assert!(
                took || coll != Collective::Bcast,
                "{mpi:?} {coll}: never shm"
            );
        }
    }
}

/// `shm` refused for a non-blocking call says the window is made by a blocking call or a
/// barrier (its common reason there); a blocking call's refusal does not.
#[test]
fn shm_refusal_names_the_window_not_made_for_a_nonblocking_call() {
    let refused = CallFacts {
        shm_refused: true,
        ..CallFacts::new(Collective::Bcast, 3, 4096)
    };
    let blocking = refused.eligible(Algorithm::Shm).unwrap_err().to_string();
    assert!(!blocking.contains("not made yet"), "{blocking}");
    assert!(
        blocking.contains("refused") && !blocking.contains("nodes"),
        "{blocking}"
    );
    // Ranks on several nodes: that is the reason, whether or not a window was refused.
    let spread = CallFacts {
        nodes: pcoll::nodes::NodeShape::blocks(4, 2),
        ..CallFacts::new(Collective::Bcast, 4, 4096)
    }
    .eligible(Algorithm::Shm)
    .unwrap_err()
    .to_string();
    assert!(spread.contains("span 2 nodes"), "{spread}");
    let nb = CallFacts {
        nonblocking: true,
        ..refused
    }
    .eligible(Algorithm::Shm)
    .unwrap_err()
    .to_string();
    assert!(
        nb.contains("not made yet") && nb.contains("next blocking collective"),
        "{nb}"
    );
    assert!(CallFacts::new(Collective::Bcast, 3, 4096)
        .eligible(Algorithm::Shm)
        .is_ok());
}

/// The rent of `hier`'s node windows (the calls that would run node steps through them
/// before they are made): positive exactly where the builder runs a node step through a
/// window ([`pcoll::algo::hier::node_shm_pays`]: from 4 KiB on nodes of more than one rank),
/// at least that step's own predicted time, and 0 for steps that never use them (`hier`'s
/// allgatherv: linear gather and binomial broadcast).
#[test]
fn node_window_rent_is_positive_exactly_where_node_steps_use_the_windows() {
    use pcoll::algo::hier::node_shm_pays;
    for mpi in [Mpi::OpenMpi, Mpi::Mpich, Mpi::IntelMpi] {
        let t = Table::builtin_for(mpi);
        let c = Config::default();
        let r = Resolver::new(&c, &t, mpi);
        for (n, k) in [(2, 1), (2, 2), (3, 4), (16, 32)] {
            for lb in [6, 10, 12, 14, 17, 20, 23] {
                let bytes = 1usize << lb;
                let at = |coll| CallFacts {
                    nodes: pcoll::nodes::NodeShape::blocks(n * k, k),
                    ..call(coll, n * k, bytes, true)
                };
                for coll in [Collective::Reduce, Collective::Allreduce] {
                    for alg in [Algorithm::Hier, Algorithm::HierMl] {
                        let rent = r.node_shm_rent(&at(coll), alg);
                        assert_eq!(
                            rent > 0.0,
                            node_shm_pays(k, bytes),
                            "{mpi:?} {n}x{k} {coll} {alg} 2^{lb}: {rent}"
                        );
                        if rent > 0.0 {
                            let shm = pcoll::model::shm::time(
                                if alg == Algorithm::Hier {
                                    Collective::Reduce
                                } else {
                                    Collective::ReduceScatter
                                },
                                k,
                                bytes,
                            );
                            assert!(
                                rent >= shm,
                                "{mpi:?} {n}x{k} {coll} {alg} 2^{lb}: {rent} < {shm}"
                            );
                        }
                    }
                }
                let ag = r.node_shm_rent(&at(Collective::Allgatherv), Algorithm::Hier);
                assert_eq!(ag, 0.0, "{mpi:?} {n}x{k} allgatherv 2^{lb}");
            }
        }
    }
}

/// Open MPI's allreduce defect fires for a negative true lower bound too, on 4.1 and 5.0
/// (session 43: `c-tests/derived.c`'s neg24 allreduce of 20011 elements in place at p = 2
/// corrupted both MPIs' heaps), and not for a type whose true lower bound is 0.
#[test]
fn openmpi_allreduce_defect_fires_for_a_negative_true_lb() {
    struct Lb(i64);
    impl NativeFacts for Lb {
        fn holes(&self) -> bool {
            self.0 != 0
        }
        fn true_lb(&self) -> i64 {
            self.0
        }
        fn unequal_counts(&self) -> bool {
            false
        }
    }
    let native = Table::parse("[[allreduce]]\nalgorithm = \"native\"\n", "n.toml").unwrap();
    let none = Config::default();
    let x = call(Collective::Allreduce, 2, 20011 * 24, true);
    for mpi in [Mpi::OpenMpi, Mpi::OpenMpi5] {
        for (lb, fires) in [(-8, true), (4, true), (0, false)] {
            let d = Resolver::new(&none, &native, mpi)
                .resolve(&x, &Lb(lb))
                .unwrap();
            let name = d.defect.map(|d| d.name);
            assert_eq!(
                name,
                fires.then_some("openmpi-allreduce-true-lb"),
                "{mpi:?} lb {lb}"
            );
            assert_eq!(d.algorithm == Algorithm::Native, !fires, "{mpi:?} lb {lb}");
        }
    }
}
