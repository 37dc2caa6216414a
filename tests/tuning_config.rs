//! Environment configuration (`pcoll::config`); the decision itself is tested in
//! `tests/decide.rs`.

use pcoll::algo::{Algorithm, Collective, Pick};
use pcoll::config::{Config, FallbackPolicy};
use pcoll::tuning::Table;
use std::collections::HashMap;
use std::path::PathBuf;

fn cfg(vars: &[(&str, &str)]) -> (Config, Vec<String>) {
    let m: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_map(&m)
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
    assert_eq!(
        c.forced(Collective::Reduce),
        Some(Pick::Alg(Algorithm::Pipeline))
    );
    assert_eq!(
        c.forced(Collective::Allreduce),
        Some(Pick::Alg(Algorithm::Ring))
    );
    assert_eq!(
        c.forced(Collective::ReduceScatter),
        Some(Pick::Alg(Algorithm::Native))
    );
    assert_eq!(
        c.forced(Collective::Allgatherv),
        Some(Pick::Alg(Algorithm::Binomial))
    );
    assert_eq!(c.segment, Some(65536));
    assert_eq!(c.fallback, FallbackPolicy::Error);
    assert_eq!(c.log.as_deref(), Some("pcoll=debug"));
    assert!(c.stats && c.disable);
    for (v, want) in [
        ("0", false),
        ("1", true),
        ("false", false),
        ("TRUE", true),
        ("yes", true),
        ("No", false),
        ("on", true),
        ("off", false),
    ] {
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
    // Every variable the library reads (`Config` reads some of them).
    let vars: Vec<(&str, &str)> = pcoll::envvars::LIBRARY.iter().map(|v| (*v, "")).collect();
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
        ("PCOLL_SEGMENT", "16XB", vec!["1..=".into(), "KiB".into()]),
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
            "maybe",
            vec![
                "0".into(),
                "1".into(),
                "true".into(),
                "yes".into(),
                "off".into(),
            ],
        ),
        (
            "PCOLL_DISABLE",
            "2",
            vec![
                "0".into(),
                "1".into(),
                "true".into(),
                "yes".into(),
                "off".into(),
            ],
        ),
    ];
    for coll in Collective::ALL {
        let mut names: Vec<String> = Algorithm::available(coll)
            .iter()
            .map(|a| a.name().to_string())
            .collect();
        names.push("model".into());
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
        Pick::Alg(Algorithm::Native)
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
