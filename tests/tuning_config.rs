//! Environment configuration (`pcoll::config`) and the per-call decision `choose`.

use pcoll::algo::{Algorithm, CallSpec, Collective, CostParams};
use pcoll::config::{
    choose, choose_with, Config, FallbackPolicy, Overrides, Source, DEFAULT_ALGORITHM,
};
use pcoll::tuning::{Rule, Table};
use pcoll::Error;
use std::collections::HashMap;
use std::path::PathBuf;

fn cfg(vars: &[(&str, &str)]) -> (Config, Vec<String>) {
    let m: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_map(&m)
}

fn spec(coll: Collective, p: usize, bytes: usize, commutative: bool) -> CallSpec {
    let elem = 4;
    let n = bytes / elem;
    let (counts, displs) = match coll {
        Collective::Reduce | Collective::Allreduce => (vec![n], vec![]),
        _ => {
            // n elements spread over p ranks.
            let c: Vec<usize> = (0..p).map(|i| n / p + usize::from(i < n % p)).collect();
            let d = c.iter().scan(0, |a, &x| {
                let o = *a;
                *a += x;
                Some(o)
            });
            let d: Vec<usize> = d.collect();
            (
                c,
                if coll == Collective::Allgatherv {
                    d
                } else {
                    vec![]
                },
            )
        }
    };
    CallSpec {
        coll,
        p,
        rank: 0,
        root: 0,
        counts,
        displs,
        commutative,
        elem_bytes: elem,
        seg_elems: 0,
        params: CostParams::default(),
        in_place: false,
    }
}

#[test]
fn defaults() {
    let (c, w) = cfg(&[]);
    assert!(w.is_empty());
    assert_eq!(c, Config::default());
    assert_eq!(c.fallback, FallbackPolicy::Warn);
    assert!(!c.stats && !c.disable);
    assert_eq!(
        (c.tuning.clone(), c.segment, c.log.clone()),
        (None, None, None)
    );
    for coll in Collective::ALL {
        assert_eq!(c.forced(coll), None);
    }
}

#[test]
fn good_values() {
    let (c, w) = cfg(&[
        ("PCOLL_TUNING", "/tmp/x.toml"),
        ("PCOLL_REDUCE", "pipeline"),
        ("PCOLL_ALLREDUCE", " Ring "),
        ("PCOLL_REDUCE_SCATTER", "native"),
        ("PCOLL_ALLGATHERV", "binomial"),
        ("PCOLL_SEGMENT", "64KiB"),
        ("PCOLL_FALLBACK", "ERROR"),
        ("PCOLL_LOG", "pcoll=debug"),
        ("PCOLL_STATS", "true"),
        ("PCOLL_DISABLE", "1"),
    ]);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c.tuning, Some(PathBuf::from("/tmp/x.toml")));
    assert_eq!(c.forced(Collective::Reduce), Some(Algorithm::Pipeline));
    assert_eq!(c.forced(Collective::Allreduce), Some(Algorithm::Ring));
    assert_eq!(c.forced(Collective::ReduceScatter), Some(Algorithm::Native));
    assert_eq!(c.forced(Collective::Allgatherv), Some(Algorithm::Binomial));
    assert_eq!(c.segment, Some(65536));
    assert_eq!(c.fallback, FallbackPolicy::Error);
    assert_eq!(c.log.as_deref(), Some("pcoll=debug"));
    assert!(c.stats && c.disable);
    for (v, want) in [("0", false), ("1", true), ("false", false), ("TRUE", true)] {
        assert_eq!(cfg(&[("PCOLL_STATS", v)]).0.stats, want);
        assert_eq!(cfg(&[("PCOLL_DISABLE", v)]).0.disable, want);
    }
    for (v, want) in [
        ("silent", FallbackPolicy::Silent),
        ("warn", FallbackPolicy::Warn),
        ("error", FallbackPolicy::Error),
    ] {
        assert_eq!(cfg(&[("PCOLL_FALLBACK", v)]).0.fallback, want);
    }
    assert_eq!(cfg(&[("PCOLL_SEGMENT", "1")]).0.segment, Some(1));
    // Chunking: 0 is a value (off), sizes take the usual forms.
    let (c, w) = cfg(&[("PCOLL_CHUNK", "0"), ("PCOLL_CHUNK_MAX", "64KiB")]);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!((c.chunk, c.chunk_max), (Some(0), Some(65536)));
    assert_eq!(cfg(&[("PCOLL_CHUNK", "7680")]).0.chunk, Some(7680));
    assert_eq!(Config::default().chunk, None);
}

#[test]
fn empty_values_are_unset() {
    let vars: Vec<(&str, &str)> = Config::VARS.iter().map(|v| (*v, "")).collect();
    let (c, w) = cfg(&vars);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c, Config::default());
}

/// Every bad value: exactly one warning, naming the variable, the value and every accepted
/// value, and the default is kept.
#[test]
fn bad_values_warn_and_keep_defaults() {
    let mut cases: Vec<(&str, &str, Vec<String>)> = vec![
        ("PCOLL_SEGMENT", "0", vec!["1..=".into(), "KiB".into()]),
        ("PCOLL_SEGMENT", "-4", vec!["1..=".into()]),
        ("PCOLL_SEGMENT", "lots", vec!["1..=".into()]),
        ("PCOLL_SEGMENT", "16KB", vec!["1..=".into(), "KiB".into()]),
        ("PCOLL_SEGMENT", "8GiB", vec!["1..=".into()]),
        ("PCOLL_CHUNK", "-1", vec!["0..=".into(), "0: off".into()]),
        ("PCOLL_CHUNK", "big", vec!["0..=".into(), "KiB".into()]),
        ("PCOLL_CHUNK_MAX", "8GiB", vec!["0..=".into()]),
        (
            "PCOLL_FALLBACK",
            "loud",
            vec!["silent".into(), "warn".into(), "error".into()],
        ),
        (
            "PCOLL_STATS",
            "yes",
            vec!["0".into(), "1".into(), "true".into(), "false".into()],
        ),
        (
            "PCOLL_DISABLE",
            "2",
            vec!["0".into(), "1".into(), "true".into(), "false".into()],
        ),
    ];
    for coll in Collective::ALL {
        let names: Vec<String> = Algorithm::available(coll)
            .iter()
            .map(|a| a.name().to_string())
            .collect();
        cases.push((coll.env_var(), "fastest", names.clone()));
        for a in Algorithm::ALL {
            if !Algorithm::available(coll).contains(&a) {
                cases.push((coll.env_var(), a.name(), names.clone()));
            }
        }
    }
    for (var, val, accepted) in &cases {
        let (c, w) = cfg(&[(var, val)]);
        assert_eq!(w.len(), 1, "{var}={val}: {w:?}");
        let w = &w[0];
        assert!(w.contains(var), "{w}");
        assert!(w.contains(val), "{w}");
        assert!(w.contains("accepted"), "{w}");
        for a in accepted {
            assert!(w.contains(a.as_str()), "{var}={val}: '{a}' missing in: {w}");
        }
        assert_eq!(c, Config::default(), "{var}={val}");
    }
    // Several bad values: one warning each.
    let (_, w) = cfg(&[
        ("PCOLL_STATS", "x"),
        ("PCOLL_DISABLE", "y"),
        ("PCOLL_REDUCE", "z"),
    ]);
    assert_eq!(w.len(), 3);
}

#[test]
fn from_lookup_matches_from_map() {
    let vars = [("PCOLL_REDUCE", "binomial"), ("PCOLL_SEGMENT", "100")];
    let f = |k: &str| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    };
    assert_eq!(Config::from_lookup(&f), cfg(&vars));
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("pcoll-test-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn load_table() {
    // Unset: the built-in table, no warning.
    let (t, w) = Config::default().load_table();
    assert!(w.is_empty());
    assert_eq!(t, Table::builtin());

    // A valid file.
    let good = temp_file("good.toml", "[[reduce]]\nalgorithm = \"native\"\n");
    let c = Config {
        tuning: Some(good.clone()),
        ..Config::default()
    };
    let (t, w) = c.load_table();
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(
        t.lookup(Collective::Reduce, 4, 4).unwrap().algorithm,
        Algorithm::Native
    );
    assert_eq!(t.lookup(Collective::Allreduce, 4, 4), None);
    assert_eq!(t.origin(), good.display().to_string());

    // An invalid file: warning naming the file and the line, built-in table.
    let bad = temp_file(
        "bad.toml",
        "[[reduce]]\nalgorithm = \"native\"\n[[reduce]]\nalgorithm = \"fast\"\n",
    );
    let c = Config {
        tuning: Some(bad.clone()),
        ..Config::default()
    };
    let (t, w) = c.load_table();
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("PCOLL_TUNING"), "{}", w[0]);
    assert!(w[0].contains(&format!("{}:4:", bad.display())), "{}", w[0]);
    assert!(w[0].contains("built-in"), "{}", w[0]);
    assert_eq!(t, Table::builtin());

    // A missing file.
    let c = Config {
        tuning: Some(PathBuf::from("/nonexistent/pcoll/tuning.toml")),
        ..Config::default()
    };
    let (t, w) = c.load_table();
    assert_eq!(w.len(), 1);
    assert!(
        w[0].contains("PCOLL_TUNING") && w[0].contains("/nonexistent/pcoll/tuning.toml"),
        "{}",
        w[0]
    );
    assert_eq!(t, Table::builtin());
    let _ = std::fs::remove_file(good);
    let _ = std::fs::remove_file(bad);
}

/// reduce: greedy (not order-preserving) for p in [4, 64), small; pipeline above 64 KiB
/// with a 16 KiB segment; allreduce: greedy everywhere; no allgatherv rules.
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

#[test]
fn precedence_forced_table_default() {
    let t = table();
    let none = Config::default();
    // Table.
    let d = choose(&none, &t, &spec(Collective::Reduce, 8, 1 << 20, true)).unwrap();
    assert_eq!(
        (d.algorithm, d.source, d.segment),
        (
            Algorithm::Pipeline,
            Source::Table { rule: 1, line: 0 },
            16384
        )
    );
    assert!(!d.warn && d.reason.is_none() && d.rejected.is_none());
    let d = choose(&none, &t, &spec(Collective::Reduce, 8, 400, true)).unwrap();
    assert_eq!((d.algorithm, d.segment), (Algorithm::Greedy, 0));
    // No rule: built-in default.
    let d = choose(&none, &t, &spec(Collective::Reduce, 2, 400, true)).unwrap();
    assert_eq!(
        (d.algorithm, d.source),
        (DEFAULT_ALGORITHM, Source::Default)
    );
    assert_eq!(DEFAULT_ALGORITHM, Algorithm::Binomial);
    let d = choose(&none, &t, &spec(Collective::Allgatherv, 5, 400, true)).unwrap();
    assert_eq!(
        (d.algorithm, d.source),
        (Algorithm::Binomial, Source::Default)
    );
    // Forced beats the table.
    let (c, _) = cfg(&[("PCOLL_REDUCE", "native")]);
    let d = choose(&c, &t, &spec(Collective::Reduce, 8, 1 << 20, true)).unwrap();
    assert_eq!((d.algorithm, d.source), (Algorithm::Native, Source::Forced));
    // ... only for its own collective.
    let d = choose(&c, &t, &spec(Collective::Allreduce, 8, 100, true)).unwrap();
    assert_eq!(d.algorithm, Algorithm::Greedy);
    // Disable beats everything.
    let (c, _) = cfg(&[("PCOLL_REDUCE", "pipeline"), ("PCOLL_DISABLE", "1")]);
    let d = choose(&c, &t, &spec(Collective::Reduce, 8, 1 << 20, false)).unwrap();
    assert_eq!(
        (d.algorithm, d.source),
        (Algorithm::Native, Source::Disabled)
    );
}

#[test]
fn segment_precedence() {
    let t = table();
    // PCOLL_SEGMENT beats the rule's segment.
    let (c, _) = cfg(&[("PCOLL_SEGMENT", "1000")]);
    let d = choose(&c, &t, &spec(Collective::Reduce, 8, 1 << 20, true)).unwrap();
    assert_eq!((d.algorithm, d.segment), (Algorithm::Pipeline, 1000));
    assert_eq!(d.seg_elems(4), 250);
    assert_eq!(d.seg_elems(3), 333);
    assert_eq!(d.seg_elems(4096), 1, "at least one element");
    // ... and applies to any source.
    let d = choose(&c, &t, &spec(Collective::Allgatherv, 3, 12, true)).unwrap();
    assert_eq!(d.segment, 1000);
    // Without a segment anywhere: 0 = the algorithm chooses.
    let d = choose(
        &Config::default(),
        &t,
        &spec(Collective::Allgatherv, 3, 12, true),
    )
    .unwrap();
    assert_eq!((d.segment, d.seg_elems(4)), (0, 0));
    // The rule's segment belongs to the rule's algorithm: a forced algorithm does not get it.
    let (c, _) = cfg(&[("PCOLL_REDUCE", "binomial")]);
    let d = choose(&c, &t, &spec(Collective::Reduce, 8, 1 << 20, true)).unwrap();
    assert_eq!((d.algorithm, d.segment), (Algorithm::Binomial, 0));
}

#[test]
fn runtime_segment_precedence() {
    let t = table();
    let big = spec(Collective::Reduce, 8, 1 << 20, true);
    let seg = |b: Option<usize>| Overrides {
        algorithm: None,
        segment: b,
    };
    // Nothing at run time: the rule's 16 KiB (same as `choose`).
    let d = choose_with(&Config::default(), &t, &big, seg(None)).unwrap();
    assert_eq!((d.algorithm, d.segment), (Algorithm::Pipeline, 16384));
    // Run time beats the rule ...
    let d = choose_with(&Config::default(), &t, &big, seg(Some(4096))).unwrap();
    assert_eq!((d.algorithm, d.segment), (Algorithm::Pipeline, 4096));
    assert_eq!(d.seg_elems(8), 512);
    // ... and PCOLL_SEGMENT; 0 at run time means "not set": PCOLL_SEGMENT again.
    let (c, _) = cfg(&[("PCOLL_SEGMENT", "1000")]);
    let d = choose_with(&c, &t, &big, seg(Some(4096))).unwrap();
    assert_eq!(d.segment, 4096);
    let d = choose_with(&c, &t, &big, seg(Some(0))).unwrap();
    assert_eq!(d.segment, 1000);
    // A forced algorithm gets the run-time segment (not the rule's), also under
    // PCOLL_DISABLE (where it is merely reported).
    let over = Overrides {
        algorithm: Some(Algorithm::Greedy),
        segment: Some(32768),
    };
    let d = choose_with(&Config::default(), &t, &big, over).unwrap();
    assert_eq!(
        (d.algorithm, d.source, d.segment),
        (Algorithm::Greedy, Source::Forced, 32768)
    );
    let (c, _) = cfg(&[("PCOLL_DISABLE", "1")]);
    let d = choose_with(&c, &t, &big, over).unwrap();
    assert_eq!((d.algorithm, d.segment), (Algorithm::Native, 32768));
    // Without a rule segment and without overrides: 0 (the model chooses).
    let d = choose_with(
        &Config::default(),
        &t,
        &spec(Collective::Allgatherv, 3, 12, true),
        Overrides::default(),
    )
    .unwrap();
    assert_eq!(d.segment, 0);
}

#[test]
fn fallback_for_non_commutative_ops() {
    let t = table();
    // The table's greedy needs a commutative op -> binomial, with a warning naming why.
    let d = choose(
        &Config::default(),
        &t,
        &spec(Collective::Reduce, 8, 400, false),
    )
    .unwrap();
    assert_eq!(
        (d.algorithm, d.source),
        (Algorithm::Binomial, Source::Default)
    );
    assert_eq!(
        d.rejected,
        Some((Algorithm::Greedy, Source::Table { rule: 0, line: 0 }))
    );
    assert!(d.warn);
    let r = d.reason.unwrap();
    for part in [
        "greedy",
        "commutative",
        "binomial",
        "test.toml",
        "p=8",
        "bytes=400",
    ] {
        assert!(r.contains(part), "{part} missing in {r}");
    }
    // Commutative: no fallback.
    let d = choose(
        &Config::default(),
        &t,
        &spec(Collective::Reduce, 8, 400, true),
    )
    .unwrap();
    assert_eq!((d.algorithm, d.warn), (Algorithm::Greedy, false));

    // Forced greedy fails -> the table's pipeline (order-preserving) runs, with its segment.
    let (c, _) = cfg(&[("PCOLL_REDUCE", "greedy")]);
    let d = choose(&c, &t, &spec(Collective::Reduce, 8, 1 << 20, false)).unwrap();
    assert_eq!(
        (d.algorithm, d.source, d.segment),
        (
            Algorithm::Pipeline,
            Source::Table { rule: 1, line: 0 },
            16384
        )
    );
    assert_eq!(d.rejected, Some((Algorithm::Greedy, Source::Forced)));
    assert!(d.reason.unwrap().contains("PCOLL_REDUCE"));
    // Forced ring and table greedy both fail for reduce_scatter/allreduce -> binomial.
    let (c, _) = cfg(&[("PCOLL_ALLREDUCE", "ring")]);
    let d = choose(&c, &t, &spec(Collective::Allreduce, 8, 1 << 20, false)).unwrap();
    assert_eq!(
        (d.algorithm, d.rejected),
        (Algorithm::Binomial, Some((Algorithm::Ring, Source::Forced)))
    );
    let d = choose(
        &Config::default(),
        &t,
        &spec(Collective::ReduceScatter, 8, 1 << 20, false),
    )
    .unwrap();
    assert_eq!((d.algorithm, d.segment), (Algorithm::Binomial, 0));
    // Ring allgatherv has no op: no fallback for non-commutative.
    let (c, _) = cfg(&[("PCOLL_ALLGATHERV", "ring")]);
    let d = choose(&c, &t, &spec(Collective::Allgatherv, 8, 1 << 20, false)).unwrap();
    assert_eq!((d.algorithm, d.rejected), (Algorithm::Ring, None));

    // Every decision passes its own precondition check.
    for coll in Collective::ALL {
        for commutative in [false, true] {
            for forced in Algorithm::ALL {
                let c = Config {
                    force: {
                        let mut f = [None; 4];
                        f[coll.index()] = Some(forced);
                        f
                    },
                    ..Config::default()
                };
                let s = spec(coll, 8, 1 << 12, commutative);
                let d = choose(&c, &t, &s).unwrap();
                assert!(
                    d.algorithm.check(&s).is_ok(),
                    "{coll} {forced} -> {}",
                    d.algorithm
                );
                assert_eq!(d.rejected.is_some(), forced.check(&s).is_err());
            }
        }
    }
}

#[test]
fn fallback_policies() {
    let t = table();
    let s = spec(Collective::Allreduce, 16, 1 << 16, false);
    let (c, _) = cfg(&[("PCOLL_FALLBACK", "silent")]);
    let d = choose(&c, &t, &s).unwrap();
    assert_eq!(d.algorithm, Algorithm::Binomial);
    assert!(!d.warn);
    assert!(d.reason.is_some() && d.rejected.is_some());

    let (c, _) = cfg(&[("PCOLL_FALLBACK", "warn")]);
    let d = choose(&c, &t, &s).unwrap();
    assert!(d.warn);

    let (c, _) = cfg(&[("PCOLL_FALLBACK", "error")]);
    match choose(&c, &t, &s) {
        Err(Error::Unsupported(m)) => {
            for part in ["greedy", "commutative", "PCOLL_FALLBACK=error", "allreduce"] {
                assert!(m.contains(part), "{part} missing in {m}");
            }
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    // The error policy changes nothing when no fallback is needed.
    let s = spec(Collective::Allreduce, 16, 1 << 16, true);
    assert_eq!(choose(&c, &t, &s).unwrap().algorithm, Algorithm::Greedy);
}

#[test]
fn builtin_table_decisions() {
    // Whatever the measured table says: commutative calls run the rule's algorithm (from a
    // table line), non-commutative calls run an order-preserving algorithm.
    let t = Table::builtin();
    let c = Config::default();
    for coll in Collective::ALL {
        for bytes in [8, 1 << 12, 1 << 16, 1 << 20, 1 << 24] {
            let rule = t.lookup(coll, 8, bytes).expect("builtin covers p = 8");
            let d = choose(&c, &t, &spec(coll, 8, bytes, true)).unwrap();
            assert_eq!(d.algorithm, rule.algorithm, "{coll} {bytes}");
            assert!(matches!(d.source, Source::Table { line, .. } if line > 0));
            let d = choose(&c, &t, &spec(coll, 8, bytes, false)).unwrap();
            assert!(
                d.algorithm.order_preserving(coll),
                "{coll} {bytes}: {}",
                d.algorithm
            );
        }
    }
}

/// `native_ranges` (the C gate's table) agrees with `lookup` size by size: for the built-in
/// table and tables with overlapping, unbounded and p-limited rules, with and without a forced
/// algorithm, at every rule bound, its neighbours and a spread of sizes.
#[test]
fn native_ranges_match_lookup() {
    let tables = [
        Table::builtin(),
        Table::parse(
            "[[reduce]]\np = [2, 4]\nbytes = [0, \"4KiB\"]\nalgorithm = \"native\"\n\
             [[reduce]]\nbytes = [\"1KiB\", \"64KiB\"]\nalgorithm = \"greedy\"\n\
             [[reduce]]\nbytes = [\"64KiB\"]\nalgorithm = \"native\"\n\
             [[allgatherv]]\np = [3]\nalgorithm = \"native\"\n\
             [[allgatherv]]\nbytes = [100, 200]\nalgorithm = \"native\"\n",
            "t",
        )
        .unwrap(),
    ];
    let mut sizes: Vec<usize> = (0..40).map(|k| 1usize << k).collect();
    sizes.extend([
        0, 1, 3, 99, 100, 101, 199, 200, 201, 1023, 1025, 65535, 65537,
    ]);
    for t in &tables {
        for coll in Collective::ALL {
            let mut probe = sizes.clone();
            for r in t.rules(coll) {
                for b in [r.bytes.lo, r.bytes.hi] {
                    probe.extend([b.saturating_sub(1), b, b.saturating_add(1)]);
                }
            }
            for forced in [None, Some(Algorithm::Native), Some(Algorithm::Binomial)] {
                for p in 1..=12 {
                    let ranges = t.native_ranges(coll, p, forced);
                    for w in ranges.windows(2) {
                        assert!(
                            w[0].1 < w[1].0,
                            "{coll} p={p}: ranges not merged: {ranges:?}"
                        );
                    }
                    // usize::MAX stands for "no bound" and is no message size.
                    for &b in probe.iter().filter(|&&b| b != usize::MAX) {
                        let want = forced
                            .or_else(|| t.lookup(coll, p, b).map(|c| c.algorithm))
                            .unwrap_or(pcoll::config::DEFAULT_ALGORITHM)
                            == Algorithm::Native;
                        let got = ranges.iter().any(|&(lo, hi)| lo <= b && b < hi);
                        assert_eq!(
                            got, want,
                            "{coll} p={p} bytes={b} forced={forced:?}: {ranges:?}"
                        );
                    }
                }
            }
        }
    }
}
