//! Tests of the learned table (`super::table`): records, their merge, the written rules.
use super::table::{learned_table, merge, Record};
use super::tests::cands;
use super::*;
use crate::config::Config;
use crate::model::native::Mpi;
use crate::tuning::Table;

fn record(coll: Collective, p: usize, octave: u8, winner: usize, calls: u64) -> Record {
    use Algorithm::*;
    let algs: &[Algorithm] = if coll == Collective::Bcast {
        &[Native, Binomial]
    } else {
        &[Native, Pipeline, Circulant]
    };
    let mut cs = cands(algs);
    cs.last_mut().unwrap().segment = 8192;
    Record {
        key: CellKey {
            coll,
            p,
            octave,
            commutative: true,
            root_nonzero: false,
        },
        agreed: (0..cs.len() as u64).map(|i| 1000 - 100 * i).collect(),
        cands: cs,
        winner,
        calls,
        timed: 5,
        margin: 0.1,
        confirm: None,
        raced: false,
        block: 1,
        crowded: false,
    }
}

#[test]
fn records_round_trip_and_merge_by_most_calls() {
    let r = record(Collective::Reduce, 4, 20, 2, 25);
    assert_eq!(Record::from_line(&r.to_line()), Some(r.clone()));
    assert_eq!(Record::from_line("reduce 4"), None);
    assert_eq!(
        Record::from_line(&r.to_line().replace(" 2 25 ", " 9 25 ")),
        None
    );
    let a = record(Collective::Reduce, 4, 20, 1, 30);
    let m = merge(vec![
        r.clone(),
        a.clone(),
        record(Collective::Bcast, 4, 3, 0, 8),
    ]);
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].0, a, "most calls first");
    assert_eq!(m[0].1, vec![Algorithm::Circulant]);
    // The order records arrive in does not matter.
    let m2 = merge(vec![a, record(Collective::Bcast, 4, 3, 0, 8), r]);
    assert_eq!(m, m2);
}

/// The written table parses, carries the measurement as comments, and replays every
/// learned cell's winner (with its segment) at every size of its octave; cells it never
/// decided fall to the rules after them (a user's table) or the model.
#[test]
fn learned_table_replays_the_winners() {
    let recs = vec![
        record(Collective::Reduce, 4, 20, 2, 25),
        Record {
            key: CellKey {
                commutative: false,
                root_nonzero: true,
                ..record(Collective::Reduce, 4, 20, 0, 1).key
            },
            ..record(Collective::Reduce, 4, 20, 1, 25)
        },
        record(Collective::Bcast, 4, 3, 0, 13),
    ];
    let used = Table::parse(
        "[model]\nalpha = 3e-6\n[[reduce]]\np = 4\nbytes = [\"1MiB\", \"2MiB\"]\nalgorithm = \"model\"\n[[reduce]]\nalgorithm = \"binomial\"\n",
        "user.toml",
    )
    .unwrap();
    let text = learned_table(recs, &used, true, &["learned here".into()]).unwrap();
    assert!(text.contains("# learned here"), "{text}");
    assert!(
        text.contains("calls explored") && text.contains("margin 10%"),
        "{text}"
    );
    let t = Table::parse(&text, "learned.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(t.model().alpha, 3e-6);
    let at = |b: usize, c: bool, root: usize| {
        t.lookup_call(Collective::Reduce, 4, b, c, root, false)
            .map(|c| (c.algorithm, c.segment))
    };
    for b in [1 << 20, (1 << 21) - 1] {
        assert_eq!(
            at(b, true, 0),
            Some((Algorithm::Circulant.into(), Some(8192)))
        );
        assert_eq!(at(b, false, 3), Some((Algorithm::Pipeline.into(), None)));
    }
    // Not learned: the user's rules (its model rule for 1-2 MiB still serves the other ops
    // and roots there).
    assert_eq!(at(1 << 20, false, 0), Some((crate::Pick::Model, None)));
    assert_eq!(
        at(1 << 22, true, 0),
        Some((Algorithm::Binomial.into(), None))
    );
    assert_eq!(t.rules(Collective::Reduce).len(), 4);
    // A user's rule the learned ones cover entirely is dropped (it could never match).
    let used2 = Table::parse(
        "[[bcast]]\np = 4\nbytes = [8, 16]\nalgorithm = \"model\"\n",
        "u",
    )
    .unwrap();
    let text = learned_table(
        vec![record(Collective::Bcast, 4, 3, 1, 13)],
        &used2,
        true,
        &[],
    );
    let t2 = Table::parse(&text.unwrap(), "l").unwrap();
    assert_eq!(t2.rules(Collective::Bcast).len(), 1);
    let bc = t.lookup(Collective::Bcast, 4, 9).map(|c| c.algorithm);
    assert_eq!(bc, Some(Algorithm::Native.into()));
    assert_eq!(
        t.lookup(Collective::Bcast, 5, 9),
        None,
        "other p: the model"
    );
    // From the built-in table (not a user's): its rules follow as carried defaults
    // (`measured = false`), which decide alike but leave their cells to a later learning run.
    let text = learned_table(
        vec![record(Collective::Bcast, 4, 3, 1, 13)],
        &used,
        false,
        &[],
    )
    .unwrap();
    assert!(text.contains("measured = false"), "{text}");
    let t = Table::parse(&text, "l").unwrap();
    assert_eq!(t.rules(Collective::Reduce).len(), 2);
    assert!(t.rules(Collective::Reduce).iter().all(|r| !r.measured));
    assert!(t.rules(Collective::Bcast).iter().all(|r| r.measured));
    let at = |b: usize| {
        t.lookup_call(Collective::Reduce, 4, b, true, 0, false)
            .map(|c| c.algorithm)
    };
    assert_eq!(at(1 << 22), Some(Algorithm::Binomial.into()));
    let cfg = Config::default();
    let r = Resolver::new(&cfg, &t, Mpi::OpenMpi);
    let call = |coll, bytes| CallFacts {
        commutative: true,
        ..CallFacts::new(coll, 4, bytes)
    };
    assert!(
        learnable(&r, &call(Collective::Reduce, 1 << 22), true),
        "a carried default's cell is explored"
    );
    assert!(
        !learnable(&r, &call(Collective::Bcast, 8), true),
        "a learned cell is not"
    );
}

/// A cell won by native covers the op kind nobody explored in its octave (the native gate
/// then sees one whole range), not the root; where another kind was learned, both keep
/// their conditions.
#[test]
fn native_cells_cover_unexplored_kinds() {
    let native = record(Collective::Reduce, 2, 10, 0, 30);
    let t = learned_table(
        vec![native.clone()],
        &Table::parse("", "empty").unwrap(),
        false,
        &[],
    )
    .unwrap();
    let t = Table::parse(&t, "l").unwrap();
    for (c, root, want) in [
        (true, 0, true),
        (false, 0, true),
        (true, 1, false),
        (false, 1, false),
    ] {
        let d = t.lookup_call(Collective::Reduce, 2, 1500, c, root, false);
        let native = d.map(|d| d.algorithm) == Some(Algorithm::Native.into());
        assert_eq!(native, want, "commutative {c} root {root}");
    }
    // A pcoll winner keeps its conditions; so does native next to it.
    let nc = Record {
        key: CellKey {
            commutative: false,
            ..native.key
        },
        ..record(Collective::Reduce, 2, 10, 1, 30)
    };
    let t = learned_table(
        vec![native, nc],
        &Table::parse("", "empty").unwrap(),
        false,
        &[],
    )
    .unwrap();
    let t = Table::parse(&t, "l").unwrap();
    let at = |c: bool, root: usize| {
        t.lookup_call(Collective::Reduce, 2, 1500, c, root, false)
            .map(|d| d.algorithm)
    };
    assert_eq!(at(true, 0), Some(Algorithm::Native.into()));
    assert_eq!(at(false, 0), Some(Algorithm::Pipeline.into()));
    assert_eq!(at(true, 1), None, "another root: the model");
    assert_eq!(at(false, 1), None, "neither learned: the model");
}

/// A learned pcoll winner is written raced (`race = true`: the replay races it against
/// native in its own process), confirmed or not, and so is every cell the run's table raced
/// (native winning there: with that rule's algorithm); a native winner of an unraced cell is
/// not.
#[test]
fn pcoll_winners_and_raced_cells_are_written_raced() {
    let unconfirmed = Record {
        confirm: Some((2, None)),
        ..record(Collective::Reduce, 2, 15, 2, 85)
    };
    let confirmed = Record {
        confirm: Some((1, Some([5000, 3000]))),
        ..record(Collective::Reduce, 2, 17, 1, 85)
    };
    let native = Record {
        confirm: Some((1, Some([3000, 5000]))),
        ..record(Collective::Reduce, 2, 19, 0, 85)
    };
    // A cell the run's table races, won by native here: replayed raced, with that rule's
    // algorithm (the second candidate); won by a pcoll algorithm: that one, raced.
    let raced_native = Record {
        raced: true,
        block: 16,
        ..record(Collective::Reduce, 2, 21, 0, 64)
    };
    let raced_pcoll = Record {
        raced: true,
        confirm: Some((2, Some([5000, 3000]))),
        ..record(Collective::Reduce, 2, 23, 2, 64)
    };
    for r in [&raced_native, &raced_pcoll, &unconfirmed] {
        assert_eq!(
            Record::from_line(&r.to_line()).as_ref(),
            Some(r),
            "{}",
            r.to_line()
        );
    }
    assert!(raced_native.note().contains("in blocks of 16 calls"));
    let used = Table::parse("", "user.toml").unwrap();
    let recs = vec![unconfirmed, confirmed, native, raced_native, raced_pcoll];
    let text = learned_table(recs, &used, true, &[]).unwrap();
    let t = Table::parse(&text, "learned.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let race = |octave: u32| {
        t.lookup_call(Collective::Reduce, 2, 1 << octave, true, 0, false)
            .map(|c| (c.algorithm, c.race))
    };
    assert_eq!(
        race(15),
        Some((Algorithm::Circulant.into(), true)),
        "{text}"
    );
    assert!(text.contains("replayed raced, circulant"), "{text}");
    assert_eq!(race(17), Some((Algorithm::Pipeline.into(), true)));
    assert_eq!(race(19), Some((Algorithm::Native.into(), false)));
    assert_eq!(race(21), Some((Algorithm::Pipeline.into(), true)));
    assert_eq!(race(23), Some((Algorithm::Circulant.into(), true)));
    assert!(
        text.contains("the table this run used races the cell"),
        "{text}"
    );
}

/// A native winner whose best pcoll candidate came within `NEAR_FACTOR` of it, where native
/// took at least `NEAR_MIN_NS`, is replayed raced with that candidate (the confirmation's
/// times where a confirmation sent the cell back to native); a clear native win, a short call
/// and a candidate never timed stay native, unraced.
#[test]
fn near_native_winners_are_written_raced() {
    use super::table::{NEAR_FACTOR, NEAR_MIN_NS};
    let n = NEAR_MIN_NS;
    let with = |octave: u8, agreed: Vec<u64>, confirm| Record {
        agreed,
        confirm,
        ..record(Collective::Reduce, 4, octave, 0, 60)
    };
    let close = (n as f64 * NEAR_FACTOR) as u64;
    let recs = vec![
        // explored: circulant (third) 1.15x native, pipeline 1.5x: circulant, raced
        with(20, vec![2 * n, 3 * n, 2 * n + 3 * n / 10], None),
        // exactly at the factor: raced
        with(21, vec![n, 2 * n, close], None),
        // just beyond it: native
        with(22, vec![n, 2 * n, close + 1], None),
        // native below NEAR_MIN_NS: native
        with(23, vec![n - 1, n, n], None),
        // a candidate never timed (u64::MAX) and one far off: native
        with(24, vec![n, u64::MAX, 3 * n], None),
        // explored as a pcoll win, sent back by its confirmation at 1.1x: raced with it
        with(
            25,
            vec![4 * n, 2 * n, 3 * n],
            Some((1, Some([2 * n, 2 * n + n / 5]))),
        ),
        // ... at 1.5x: native
        with(
            26,
            vec![4 * n, 2 * n, 3 * n],
            Some((1, Some([2 * n, 3 * n]))),
        ),
    ];
    let want = [
        Some(Algorithm::Circulant),
        Some(Algorithm::Circulant),
        None,
        None,
        None,
        Some(Algorithm::Pipeline),
        None,
    ];
    for (r, w) in recs.iter().zip(want) {
        assert_eq!(r.near().map(|(c, _)| c.alg), w, "{}", r.to_line());
        assert_eq!(r.raced_alg().map(|c| c.alg), w, "{}", r.to_line());
    }
    assert!(
        recs[0]
            .note()
            .contains("measured 1.15x native (within 1.2x)"),
        "{}",
        recs[0].note()
    );
    let text = learned_table(recs, &Table::parse("", "u").unwrap(), true, &[]).unwrap();
    let t = Table::parse(&text, "learned.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    for (octave, w) in (20..).zip(want) {
        let got = t
            .lookup_call(Collective::Reduce, 4, 1 << octave, true, 0, false)
            .map(|c| (c.algorithm, c.race, c.segment));
        let expect = match w {
            Some(a) => (a.into(), true, (a == Algorithm::Circulant).then_some(8192)),
            None => (Algorithm::Native.into(), false, None),
        };
        assert_eq!(got, Some(expect), "octave {octave}\n{text}");
    }
}

#[test]
fn near_native_winners_of_a_crowded_run_stay_native() {
    let n = super::table::NEAR_MIN_NS;
    let near = Record {
        agreed: vec![2 * n, 3 * n, 2 * n + n / 10],
        ..record(Collective::Allgather, 4, 15, 0, 85)
    };
    assert!(near.near().is_some());
    let crowded = Record {
        crowded: true,
        ..near.clone()
    };
    assert_eq!(crowded.near(), None);
    assert_eq!(crowded.raced_alg(), None);
    assert!(!crowded.note().contains("within"), "{}", crowded.note());
    // Its times were each rank's medians (`Cell::crowded`), and its note says so.
    assert!(crowded.note().contains("medians (a crowded node)"));
    assert!(near.note().contains("lower quartiles"), "{}", near.note());
    // From 64 KiB (octave 16) a crowded run's close native winners are raced as anywhere.
    let large = Record {
        crowded: true,
        key: CellKey {
            octave: 16,
            ..near.key
        },
        ..near.clone()
    };
    assert!(large.near().is_some());
    // A pcoll winner and a cell the table races are raced there as anywhere.
    let won = Record {
        crowded: true,
        ..record(Collective::Allgather, 4, 14, 2, 85)
    };
    assert_eq!(won.raced_alg().map(|c| c.alg), Some(Algorithm::Circulant));
    let raced = Record {
        crowded: true,
        raced: true,
        ..record(Collective::Allgather, 4, 13, 0, 85)
    };
    assert_eq!(raced.raced_alg().map(|c| c.alg), Some(Algorithm::Pipeline));
}
