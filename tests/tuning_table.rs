//! tuning.toml parsing, validation messages, lookup, builder and round trip.

use pcoll::algo::{Algorithm, Collective, CostParams, Pick};
use pcoll::tuning::{Bounds, Rule, Table, BUILTIN_TOML, INF};
use proptest::prelude::*;

const KIB64: usize = 65536;

/// The error of parsing `text` as "t.toml" (panics if it parses).
fn err(text: &str) -> String {
    match Table::parse(text, "t.toml") {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

fn assert_has(e: &str, parts: &[&str]) {
    for p in parts {
        assert!(e.contains(p), "missing {p:?} in error:\n{e}");
    }
}

#[test]
fn builtin_parses_and_covers_every_cell() {
    // The repository's tuning.toml is written by `make tune` (pcoll-tune) on the development
    // machine; whatever it measured, it must parse, round-trip, and give every cell a rule.
    let t = Table::parse(BUILTIN_TOML, "tuning.toml").expect("repository tuning.toml parses");
    assert_eq!(t, Table::builtin());
    assert_eq!(Table::parse(&t.to_toml(), "round trip").unwrap(), t);
    let m = t.model();
    assert!(m.alpha > 0.0 && m.beta > 0.0 && m.gamma >= 0.0, "{m:?}");
    for coll in Collective::ALL {
        for p in [2, 3, 4, 8, 17, 64, 1000] {
            for bytes in [0, 1, 8, KIB64 - 1, KIB64, KIB64 + 1, 1 << 20, 1 << 30] {
                let c = t
                    .lookup(coll, p, bytes)
                    .expect("builtin covers every cell for p >= 2");
                assert!(c.algorithm.available(coll), "{coll}: {}", c.algorithm);
            }
        }
    }
}

#[test]
fn origin_lines_point_at_the_rule_headers() {
    let text = "# c\n[model]\nalpha = 1e-6\n\n[[allreduce]]\nbytes = [0, 100]\nalgorithm = \"binomial\"\n\n  [[allreduce]]\nalgorithm = \"ring\"\nsegment = \"8KiB\"\n[[reduce]]\nalgorithm = \"pipeline\"\n";
    let t = Table::parse(text, "x.toml").unwrap();
    // Independent: header lines found by scanning the text.
    let headers: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[allreduce]]")
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(headers, vec![5, 9]);
    let c = t.lookup(Collective::Allreduce, 4, 50).unwrap();
    assert_eq!(
        (c.algorithm, c.rule, c.origin_line),
        (Pick::Alg(Algorithm::Binomial), 0, 5)
    );
    let c = t.lookup(Collective::Allreduce, 4, 100).unwrap();
    assert_eq!(
        (c.algorithm, c.rule, c.origin_line, c.segment),
        (Pick::Alg(Algorithm::Ring), 1, 9, Some(8192))
    );
    assert_eq!(
        t.lookup(Collective::Reduce, 4, 100).unwrap().origin_line,
        12
    );
    assert_eq!(t.lookup(Collective::Allgatherv, 4, 100), None);
    assert_eq!(t.model().alpha, 1e-6);
    // Omitted model keys take the defaults.
    assert_eq!(t.model().beta, CostParams::default().beta);
    assert!(t.describe(Collective::Allreduce, &c).contains("x.toml:9"));
}

#[test]
fn range_forms() {
    let t = Table::parse(
        "[[reduce]]\np = 4\nbytes = [\"1KiB\", \"2 KiB\"]\nalgorithm = \"native\"\n\
         [[reduce]]\np = [3]\nalgorithm = \"pipeline\"\n\
         [[reduce]]\np = [0, \"inf\"]\nbytes = [5, 6]\nalgorithm = \"binomial\"\n",
        "t",
    )
    .unwrap();
    let r = t.rules(Collective::Reduce);
    assert_eq!(r[0].p, Bounds::new(4, 5));
    assert_eq!(r[0].bytes, Bounds::new(1024, 2048));
    assert_eq!(r[1].p, Bounds::new(3, INF));
    assert!(r[1].bytes.is_any());
    assert_eq!(r[2].p, Bounds::ANY);
    let alg = |p, b| t.lookup(Collective::Reduce, p, b).map(|c| c.algorithm);
    assert_eq!(alg(4, 1024), Some(Pick::Alg(Algorithm::Native)));
    assert_eq!(alg(4, 2048), Some(Pick::Alg(Algorithm::Pipeline)));
    assert_eq!(alg(2, 5), Some(Pick::Alg(Algorithm::Binomial)));
    assert_eq!(alg(2, 6), None);
    assert_eq!(alg(usize::MAX - 1, 0), Some(Pick::Alg(Algorithm::Pipeline)));
}

#[test]
fn empty_file_is_an_empty_table() {
    let t = Table::parse("# nothing\n", "t").unwrap();
    for coll in Collective::ALL {
        assert_eq!(t.lookup(coll, 4, 4), None);
    }
    assert_eq!(t.model(), CostParams::default());
    assert_eq!(t.model_section(), None);
}

#[test]
fn syntax_error_names_file_line_column() {
    let e = err("[[reduce]]\nalgorithm = \"binomial\"\nsegment = = 3\n");
    assert_has(&e, &["t.toml:3:", "segment = = 3"]);
    let e = err("[[reduce]\nalgorithm = \"binomial\"\n");
    assert_has(&e, &["t.toml:1:"]);
}

#[test]
fn unknown_keys_and_sections() {
    let e = err("[[reduce]]\nalgorithm = \"binomial\"\nsegmnet = 4\n");
    assert_has(
        &e,
        &[
            "t.toml:3:",
            "segmnet",
            "`segment`",
            "`algorithm`",
            "`p`",
            "`bytes`",
        ],
    );
    let e = err("[[gather]]\nalgorithm = \"binomial\"\n");
    assert_has(
        &e,
        &[
            "t.toml:1:",
            "gather",
            "[[allgatherv]]",
            "[[bcast]]",
            "[model]",
        ],
    );
    // A bcast algorithm the section does not have.
    let e = err("[[bcast]]\nalgorithm = \"ring\"\n");
    assert_has(&e, &["t.toml:2:", "ring", "scatter_allgather"]);
    let e = err("[model]\ndelta = 1e-9\n");
    assert_has(&e, &["t.toml:2:", "delta", "`alpha`", "`gamma`"]);
    let e = err("[reduce]\nalgorithm = \"binomial\"\n");
    assert_has(&e, &["t.toml:1:", "[[reduce]]"]);
    let e = err("algorithm = \"binomial\"\n");
    assert_has(&e, &["t.toml:1:", "algorithm"]);
}

#[test]
fn unknown_and_unavailable_algorithms_list_the_accepted_ones() {
    for coll in Collective::ALL {
        let e = err(&format!("\n[[{coll}]]\nalgorithm = \"fastest\"\n"));
        assert_has(&e, &["t.toml:3:", "fastest"]);
        for a in Algorithm::available(coll) {
            assert_has(&e, &[a.name()]);
        }
        for a in Algorithm::ALL {
            if Algorithm::available(coll).contains(&a) {
                assert!(Table::parse(&format!("[[{coll}]]\nalgorithm = \"{a}\"\n"), "t").is_ok());
                continue;
            }
            let e = err(&format!("[[{coll}]]\nalgorithm = \"{a}\"\n"));
            assert_has(&e, &["t.toml:2:", "not available", coll.name()]);
            for ok in Algorithm::available(coll) {
                assert_has(&e, &[ok.name()]);
            }
        }
    }
    let e = err("[[reduce]]\np = [2, 4]\n");
    assert_has(&e, &["t.toml:1:", "algorithm", "missing", "binomial"]);
    let e = err("[[reduce]]\nalgorithm = 3\n");
    assert_has(&e, &["t.toml:2:"]);
}

#[test]
fn bad_ranges() {
    let cases: &[(&str, &[&str])] = &[
        ("bytes = [10, 5]", &["inverted", "[10, 5)"]),
        ("bytes = [7, 7]", &["empty", "[7, 7)"]),
        ("p = [9, 2]", &["inverted"]),
        ("p = [-1, 4]", &["negative"]),
        ("bytes = [0, -4]", &["negative"]),
        ("p = [1, 99999999999999]", &["too large", "2147483648"]),
        ("bytes = [0, 999999999999999999]", &["too large"]),
        ("bytes = [\"inf\"]", &["upper bound"]),
        ("bytes = [1, 2, 3]", &["3 elements", "[lo, hi]"]),
        ("bytes = []", &["0 elements", "[lo, hi]"]),
        ("p = [1.5, 3]", &["not an integer"]),
        ("p = [\"4KiB\", 9]", &["integer"]),
        ("bytes = [\"64XB\", \"inf\"]", &["unit", "64KiB"]),
        ("bytes = true", &["boolean", "[lo, hi]"]),
    ];
    for (line, want) in cases {
        let e = err(&format!("[[reduce]]\n{line}\nalgorithm = \"binomial\"\n"));
        assert_has(&e, &["t.toml:2:", "[[reduce]] rule 1"]);
        assert_has(&e, want);
    }
}

#[test]
fn bad_segments_and_model() {
    for (v, want) in [
        ("0", "> 0"),
        ("-5", "negative"),
        ("\"3GiB\"", "too large"),
        ("1.5", "not an integer"),
    ] {
        let e = err(&format!(
            "[[reduce]]\nalgorithm = \"pipeline\"\nsegment = {v}\n"
        ));
        assert_has(&e, &["t.toml:3:", "segment", want, "1..="]);
    }
    for (k, v) in [
        ("alpha", "0.0"),
        ("alpha", "-1e-6"),
        ("beta", "5.0"),
        ("gamma", "-1e-9"),
        ("gamma", "nan"),
        ("alpha", "inf"),
    ] {
        let e = err(&format!("[model]\n{k} = {v}\n"));
        assert_has(&e, &["t.toml:2:", k, "accepted"]);
    }
    assert!(Table::parse("[model]\ngamma = 0.0\n", "t").is_ok());
    let e = err("[model]\nalpha = \"fast\"\n");
    assert_has(&e, &["t.toml:2:"]);
}

#[test]
fn all_errors_are_reported_at_once() {
    let e =
        err("[[reduce]]\nalgorithm = \"x\"\n[[allreduce]]\nbytes = [3, 1]\nalgorithm = \"ring\"\n");
    assert_has(&e, &["t.toml:2:", "t.toml:4:"]);
    assert_eq!(e.lines().filter(|l| l.starts_with("t.toml:")).count(), 2);
}

#[test]
fn shadowing() {
    // Completely covered by one earlier rule.
    let e = err("[[reduce]]\nbytes = [0, 100]\nalgorithm = \"binomial\"\n\n[[reduce]]\np = [2, 4]\nbytes = [10, 20]\nalgorithm = \"pipeline\"\n");
    assert_has(&e, &["t.toml:5:", "never match", "line 1"]);
    // Covered by the union of two.
    let e = err("[[allreduce]]\nbytes = [0, 100]\nalgorithm = \"binomial\"\n[[allreduce]]\nbytes = [100]\nalgorithm = \"ring\"\n[[allreduce]]\np = [8]\nalgorithm = \"binomial\"\n");
    assert_has(&e, &["t.toml:7:", "never match", "line 1", "line 4"]);
    // Partial overlap is fine (first match decides).
    let t = Table::parse("[[reduce]]\np = [2, 8]\nalgorithm = \"binomial\"\n[[reduce]]\np = [4, 16]\nalgorithm = \"pipeline\"\n", "t").unwrap();
    assert_eq!(
        t.lookup(Collective::Reduce, 5, 0).unwrap().algorithm,
        Pick::Alg(Algorithm::Binomial)
    );
    assert_eq!(
        t.lookup(Collective::Reduce, 8, 0).unwrap().algorithm,
        Pick::Alg(Algorithm::Pipeline)
    );
    // The same cell in different collectives is no overlap.
    assert!(Table::parse(
        "[[reduce]]\nalgorithm = \"binomial\"\n[[allreduce]]\nalgorithm = \"binomial\"\n",
        "t"
    )
    .is_ok());
    // A duplicate rule is dead.
    let e = err("[[allgatherv]]\nalgorithm = \"ring\"\n[[allgatherv]]\nalgorithm = \"ring\"\n");
    assert_has(&e, &["t.toml:3:", "never match"]);
}

#[test]
fn builder_validates_like_the_parser() {
    use Algorithm::*;
    let t = Table::builder()
        .origin("tuner")
        .comment("written by a test\nsecond line")
        .model(CostParams {
            alpha: 3e-6,
            beta: 1e-10,
            gamma: 0.0,
        })
        .rule(
            Collective::Reduce,
            Rule::new(Binomial)
                .p(2..9)
                .bytes(..KIB64)
                .note("ratio 1.3 vs native"),
        )
        .rule(
            Collective::Reduce,
            Rule::new(Pipeline).bytes(KIB64..).segment(16384),
        )
        .rule(Collective::Allgatherv, Rule::new(Ring))
        .build()
        .unwrap();
    let text = t.to_toml();
    assert!(text.contains("# ratio 1.3 vs native\n[[reduce]]"), "{text}");
    assert!(text.contains("# second line"), "{text}");
    let back = Table::parse(&text, "again").unwrap();
    assert_eq!(back, t);
    assert_eq!(back.model(), t.model());
    let c = back.lookup(Collective::Reduce, 100, 1 << 20).unwrap();
    assert_eq!(
        (c.algorithm, c.segment, c.rule),
        (Pick::Alg(Pipeline), Some(16384), 1)
    );
    // p = 100 is outside 2..9, small message: no rule.
    assert_eq!(back.lookup(Collective::Reduce, 100, 10), None);

    let e = Table::builder()
        .rule(Collective::Reduce, Rule::new(Ring))
        .rule(Collective::Allreduce, Rule::new(Binomial).bytes(5..5))
        .rule(Collective::Allgatherv, Rule::new(Ring).segment(0))
        .rule(Collective::Allgatherv, Rule::new(Binomial).p(3..4))
        .model(CostParams {
            alpha: -1.0,
            beta: 1e-10,
            gamma: 0.0,
        })
        .build()
        .unwrap_err();
    assert_has(
        &e,
        &[
            "reduce rule 1",
            "not available",
            "empty",
            "> 0",
            "never match",
            "alpha",
        ],
    );
}

/// Random rules over a small domain: coordinates 0..=10, upper bound possibly INF.
fn arb_bounds() -> impl Strategy<Value = Bounds> {
    prop_oneof![
        1 => Just(Bounds::ANY),
        4 => (0usize..10, 1usize..6, any::<bool>()).prop_map(|(lo, len, inf)| {
            Bounds::new(lo, if inf { INF } else { (lo + len).min(11) })
        }),
    ]
}

fn arb_rule() -> impl Strategy<Value = (usize, Rule)> {
    (
        0usize..4,
        arb_bounds(),
        arb_bounds(),
        0usize..3,
        prop::option::of(1usize..100_000),
    )
        .prop_map(|(c, p, b, a, seg)| {
            // Algorithms available for every collective.
            let alg = [Algorithm::Native, Algorithm::Binomial, Algorithm::Butterfly][a];
            let mut r = Rule::new(alg);
            r.p = p;
            r.bytes = b;
            r.segment = seg;
            (c, r)
        })
}

/// Sample points: the whole small domain plus huge values.
fn points() -> Vec<usize> {
    let mut v: Vec<usize> = (0..=12).collect();
    v.push(1 << 40);
    v.push(usize::MAX - 1);
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// build() succeeds iff every rule is the first match of some point (brute force), and
    /// then lookup agrees with a first-match scan, and to_toml round-trips.
    #[test]
    fn lookup_shadowing_and_round_trip(rules in prop::collection::vec(arb_rule(), 0..7)) {
        let mut b = Table::builder();
        for (c, r) in &rules {
            b = b.rule(Collective::ALL[*c], r.clone());
        }
        let pts = points();
        // Brute force: which rules are ever the first match?
        let mut dead = false;
        for c in 0..4 {
            let list: Vec<&Rule> = rules.iter().filter(|(k, _)| *k == c).map(|(_, r)| r).collect();
            for (j, r) in list.iter().enumerate() {
                let live = pts.iter().any(|&p| pts.iter().any(|&y| {
                    r.p.lo <= p && p < r.p.hi && r.bytes.lo <= y && y < r.bytes.hi
                        && !list[..j].iter().any(|e| e.p.lo <= p && p < e.p.hi && e.bytes.lo <= y && y < e.bytes.hi)
                }));
                dead |= !live;
            }
        }
        match b.build() {
            Err(e) => {
                prop_assert!(dead, "rejected a table without dead rules: {e}");
                prop_assert!(e.contains("never match"), "{e}");
            }
            Ok(t) => {
                prop_assert!(!dead, "accepted a table with a dead rule");
                for c in 0..4 {
                    let coll = Collective::ALL[c];
                    let list: Vec<&Rule> = rules.iter().filter(|(k, _)| *k == c).map(|(_, r)| r).collect();
                    for &p in &pts {
                        for &y in &pts {
                            let want = list.iter().position(|r| r.p.lo <= p && p < r.p.hi && r.bytes.lo <= y && y < r.bytes.hi);
                            let got = t.lookup(coll, p, y);
                            prop_assert_eq!(got.map(|g| g.rule), want);
                            if let (Some(g), Some(w)) = (got, want) {
                                prop_assert_eq!(g.algorithm, list[w].algorithm);
                                prop_assert_eq!(g.segment, list[w].segment);
                            }
                        }
                    }
                }
                let back = Table::parse(&t.to_toml(), "rt").map_err(|e| TestCaseError::fail(format!("{e}\n{}", t.to_toml())))?;
                prop_assert_eq!(&back, &t);
            }
        }
    }

    #[test]
    fn model_round_trips(alpha in 1e-9f64..0.5, beta in 1e-13f64..1e-3, gamma in 0.0f64..1e-3) {
        let m = CostParams { alpha, beta, gamma };
        let t = Table::builder().model(m).build().unwrap();
        let back = Table::parse(&t.to_toml(), "rt").unwrap();
        prop_assert_eq!(back.model(), m);
    }
}

/// The example in the module docs of `pcoll::tuning` is a valid table that means what its
/// comments say.
#[test]
fn documented_example_parses() {
    let src = include_str!("../src/tuning/mod.rs");
    let body: Vec<&str> = src
        .lines()
        .skip_while(|l| l.trim() != "//! ```toml")
        .skip(1)
        .take_while(|l| l.trim() != "//! ```")
        .map(|l| {
            l.strip_prefix("//!")
                .unwrap()
                .strip_prefix(' ')
                .unwrap_or("")
        })
        .collect();
    assert!(body.len() > 10, "example not found");
    let t = Table::parse(&body.join("\n"), "doc example").unwrap();
    let alg = |p, b| {
        t.lookup(Collective::Reduce, p, b)
            .map(|c| (c.algorithm, c.segment))
    };
    assert_eq!(
        alg(2, 0),
        Some((Pick::Alg(Algorithm::Binomial), Some(16384)))
    );
    assert_eq!(
        alg(8, KIB64 - 1),
        Some((Pick::Alg(Algorithm::Binomial), Some(16384)))
    );
    assert_eq!(alg(9, 100), None);
    assert_eq!(alg(9, KIB64), Some((Pick::Alg(Algorithm::Pipeline), None)));
    assert_eq!(t.model().gamma, 2.5e-10);
}
