//! Tests of `tune.rs` (a file of their own: the size bar counts a file's every line).
use super::*;
use crate::bench::run::{CaseResult, Stats, VariantResult};
use Algorithm::*;

/// A measured case: (variant, median, p90) per candidate after native.
fn measured(cands: &[(Algorithm, f64, f64)]) -> Measured {
    let vr = |variant, algorithm, median, p90| VariantResult {
        variant,
        algorithm,
        samples: vec![],
        stats: Stats {
            min: median,
            median,
            p90,
            mean: median,
        },
        errors: 0,
        mismatches: Some(0),
    };
    let mut variants = vec![vr(Variant::Native, Native, 100.0, 100.0)];
    variants.extend(cands.iter().map(|&(a, m, p)| vr(Variant::Alg(a), a, m, p)));
    Measured {
        coll: Collective::Allreduce,
        p: 4,
        bytes: 1 << 22,
        count: 1 << 19,
        result: CaseResult {
            iters: 10,
            native_mismatches: Some(0),
            variants,
            skipped: vec![],
        },
        predicted: Default::default(),
        buffers: "hot",
        floor_us: None,
    }
}

#[test]
fn near_ties_go_to_the_smaller_spread() {
    // 2.7% apart by median: a tie; ring's p90 is far smaller.
    let m = measured(&[
        (Butterfly, 60.0, 90.0),
        (Ring, 61.6, 63.0),
        (Binomial, 80.0, 81.0),
    ]);
    let c = Cell::decide(&m, false).unwrap();
    assert_eq!(c.alg, Ring);
    assert_eq!(c.time_us, 61.6);
    assert_eq!(c.rival.map(|r| r.0), Some(Pick::of(Butterfly)));
    // 5% apart: no tie, the median decides whatever the spread.
    let m = measured(&[(Butterfly, 60.0, 90.0), (Ring, 63.0, 63.5)]);
    assert_eq!(Cell::decide(&m, false).unwrap().alg, Butterfly);
    // A tie where the fastest also spreads least: it stays.
    let m = measured(&[(Butterfly, 60.0, 61.0), (Ring, 61.0, 70.0)]);
    assert_eq!(Cell::decide(&m, false).unwrap().alg, Butterfly);
}

fn cell(p: usize, bytes: usize, alg: Algorithm) -> Cell {
    Cell {
        coll: Collective::Allreduce,
        p,
        bytes,
        alg,
        segment: None,
        time_us: 1.0,
        native_us: 2.0,
        rival: Some((Pick::of(Native), 1.5)),
        remeasured: false,
        times: vec![(Pick::of(alg), 1.0), (Pick::of(Native), 1.5)],
        smoothed: false,
    }
}

#[test]
fn merges_sizes_and_p() {
    let mut cells = Vec::new();
    for p in [2, 3] {
        cells.push(cell(p, 8, Binomial));
        cells.push(cell(p, 64, Binomial));
        cells.push(cell(p, 1024, Ring));
        cells.push(cell(p, 65536, Ring));
    }
    cells.push(cell(4, 8, Native));
    cells.push(cell(4, 64, Binomial));
    let s = spans(&cells);
    let got: Vec<_> = s.iter().map(|x| (x.p, x.bytes, x.alg)).collect();
    assert_eq!(
        got,
        vec![
            ((2, 4), (0, 1024), Binomial),
            ((2, 4), (1024, INF), Ring),
            ((4, 5), (0, 64), Native),
            ((4, 5), (64, INF), Binomial),
        ]
    );
    // Every measured cell is covered by exactly one span with its own winner.
    for c in &cells {
        let hits: Vec<_> = s
            .iter()
            .filter(|x| x.p.0 <= c.p && c.p < x.p.1 && x.bytes.0 <= c.bytes && c.bytes < x.bytes.1)
            .collect();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].alg, c.alg);
    }
    assert_eq!(s[0].cells.len(), 4);
    let n = s[0].note();
    assert!(n.contains("median/native 0.50"), "{n}");
    assert!(n.contains("p=2,3"), "{n}");
    assert!(n.contains("closest rival native +50.0%"), "{n}");
}

#[test]
fn no_extrapolation_limits_last_p() {
    let s = spans(&[cell(2, 8, Ring)]);
    assert_eq!(s[0].p, (2, 3));
    assert_eq!(s[0].bytes, (0, INF));
    let t = super::super::tuning_api::builder()
        .rule(Collective::Allreduce, s[0].rule())
        .build()
        .unwrap()
        .to_toml();
    assert!(
        t.contains("[[allreduce]]\np = [2, 3]\nalgorithm = \"ring\""),
        "{t}"
    );
}

#[test]
fn smoothing_absorbs_isolated_near_ties_only() {
    let mut cells = vec![
        cell(2, 8, Ring),
        cell(2, 16, Binomial),
        cell(2, 32, Ring),
        cell(2, 64, Binomial),
        cell(2, 128, Ring),
        cell(3, 8, Ring),
    ];
    // At 16 B ring is 3% slower than binomial: absorbed. At 64 B it is 30% slower: kept.
    cells[1].times = vec![(Pick::of(Binomial), 1.0), (Pick::of(Ring), 1.03)];
    cells[3].times = vec![(Pick::of(Binomial), 1.0), (Pick::of(Ring), 1.3)];
    smooth(&mut cells, 0.05);
    let algs: Vec<Algorithm> = cells.iter().map(|c| c.alg).collect();
    assert_eq!(algs, vec![Ring, Ring, Ring, Binomial, Ring, Ring]);
    assert!(cells[1].smoothed && !cells[3].smoothed);
    assert_eq!(cells[1].time_us, 1.03);
    assert_eq!(cells[1].rival.map(|r| r.0), Some(Pick::of(Binomial)));
    let s = spans(&cells);
    assert_eq!(s.len(), 4, "{s:?}");
    assert!(
        s[0].note().contains("1 isolated cell(s) smoothed"),
        "{}",
        s[0].note()
    );
}

#[test]
fn segments_split_rules_and_are_written() {
    // greedy at the model's segment for 64 KiB, greedy@32KiB for 256 KiB and 1 MiB (0.8x
    // the model's segment there), native below.
    let mut cells = vec![cell(2, 8, Native), cell(2, 65536, Greedy)];
    for b in [262144, 1 << 20] {
        let mut c = cell(2, b, Greedy);
        c.segment = Some(32768);
        c.time_us = 0.8;
        c.times = vec![
            (
                Pick {
                    alg: Greedy,
                    segment: Some(32768),
                },
                0.8,
            ),
            (Pick::of(Greedy), 1.0),
            (Pick::of(Native), 1.5),
        ];
        cells.push(c);
    }
    let s = spans(&cells);
    let got: Vec<_> = s.iter().map(|x| (x.bytes, x.alg, x.segment)).collect();
    assert_eq!(
        got,
        vec![
            ((0, 65536), Native, None),
            ((65536, 262144), Greedy, None),
            ((262144, INF), Greedy, Some(32768)),
        ]
    );
    let n = s[2].note();
    assert!(n.contains("measured: greedy@32KiB at p=2"), "{n}");
    assert!(n.contains("model's segment for greedy: 0.80"), "{n}");
    assert!(!s[1].note().contains("model's segment"), "{}", s[1].note());
    let mut b = super::super::tuning_api::builder();
    for x in &s {
        b = b.rule(x.coll, x.rule());
    }
    let t = b.build().unwrap().to_toml();
    assert!(t.contains("algorithm = \"greedy\"\nsegment = 32768"), "{t}");
    // The written table gives the segment back for the cells it came from.
    let table = super::super::tuning_api::parse(&t, "test").unwrap();
    let c = table.lookup(Collective::Allreduce, 2, 1 << 20).unwrap();
    assert_eq!(
        (c.algorithm, c.segment),
        (pcoll::Pick::Alg(Greedy), Some(32768))
    );
    let c = table.lookup(Collective::Allreduce, 2, 65536).unwrap();
    assert_eq!((c.algorithm, c.segment), (pcoll::Pick::Alg(Greedy), None));
}

#[test]
fn segment_variants_of_the_fastest_segmented_algorithm() {
    let spec = probe_spec(Collective::Reduce, 4, 1 << 17, 8, CostParams::default());
    let rank = vec![
        (Variant::Native, 10.0),
        (Variant::Alg(Binomial), 11.0),
        (Variant::Alg(Pipeline), 12.0),
        (Variant::Alg(Greedy), 13.0),
    ];
    let v = segment_variants(&spec, &rank, 0.5, &[0.25, 4.0]);
    assert_eq!(v.first(), Some(&Variant::Alg(Pipeline)), "{v:?}");
    assert!(v.len() >= 2, "{v:?}");
    assert!(v[1..]
        .iter()
        .all(|x| matches!(x, Variant::Seg(Pipeline, b) if *b >= 8)));
    // Too slow: nothing to try. Allgatherv: no segmented algorithm.
    assert!(segment_variants(&spec, &rank, 0.1, &[0.25, 4.0]).is_empty());
    let ag = probe_spec(Collective::Allgatherv, 4, 1 << 17, 8, CostParams::default());
    let rank = vec![(Variant::Alg(Circulant), 1.0)];
    assert!(segment_variants(&ag, &rank, 0.5, &[0.25, 4.0]).is_empty());
    assert!(is_candidate(Variant::Seg(Greedy, 4096)));
}

#[test]
fn close_calls_within_margin() {
    let r = vec![
        (Variant::Alg(Ring), 10.0),
        (Variant::Native, 10.4),
        (Variant::Alg(Binomial), 10.6),
    ];
    assert_eq!(
        close_calls(&r, 0.05),
        vec![Variant::Alg(Ring), Variant::Native]
    );
    assert!(!is_candidate(Variant::Auto));
    assert!(!is_candidate(Variant::Alg(Native)));
}
