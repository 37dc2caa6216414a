use super::table::Record;
use super::*;
use crate::config::Config;
use crate::model::native::Mpi;
use crate::tuning::Table;

pub(super) fn cands(algs: &[Algorithm]) -> Vec<Candidate> {
    algs.iter()
        .map(|&alg| Candidate { alg, segment: 0 })
        .collect()
}

#[test]
fn exploration_rotates_warms_up_then_agrees_once() {
    use Algorithm::*;
    let p = Params {
        timed: 2,
        ..Params::default()
    };
    let mut c = Cell::new(cands(&[Native, Ring, Circulant]), p.timed);
    let steps: Vec<Step> = (0..9).map(|_| c.step()).collect();
    let run = |cand, timed| Step::Run { cand, timed };
    assert_eq!(
        steps,
        vec![
            run(0, false),
            run(1, false),
            run(2, false),
            run(0, true),
            run(1, true),
            run(2, true),
            run(0, true),
            run(1, true),
            run(2, true),
        ]
    );
    assert_eq!(c.step(), Step::Agree);
    assert_eq!(c.explore_calls(), 9);
    c.settle(vec![100_000, 50_000, 80_000], p.margin, false);
    assert_eq!(c.step(), Step::Settled(1));
    assert_eq!(c.step(), Step::Settled(1));
    assert_eq!(c.calls, 10, "the exploration's calls and its agreement");
    assert_eq!(c.settled.load(std::sync::atomic::Ordering::Relaxed), 2);
    // Native alone: decided at once, no agreement.
    let mut one = Cell::new(cands(&[Native]), p.timed);
    assert_eq!(one.step(), Step::Settled(0));
}

#[test]
fn small_cells_take_more_timed_calls_and_huge_ones_fewer() {
    let key = |bytes| CellKey::of(&CallFacts::new(Collective::Reduce, 2, bytes)).unwrap();
    let p = Params::default();
    assert_eq!(p.timed_for(&key(8)), DEFAULT_TIMED * SMALL_FACTOR);
    assert_eq!(
        p.timed_for(&key(SMALL_CELL - 1)),
        DEFAULT_TIMED * SMALL_FACTOR
    );
    assert_eq!(p.timed_for(&key(SMALL_CELL)), DEFAULT_TIMED);
    assert_eq!(p.timed_for(&key(HUGE_CELL - 1)), DEFAULT_TIMED);
    assert_eq!(p.timed_for(&key(HUGE_CELL)), 3);
    assert_eq!(p.timed_for(&key(1 << 24)), 3);
    let one = Params { timed: 1, ..p };
    assert_eq!(one.timed_for(&key(1 << 24)), 1);
    // Never above the largest accepted count, nor below the one asked for.
    let many = Params {
        timed: MAX_TIMED,
        ..p
    };
    assert_eq!(many.timed_for(&key(8)), MAX_TIMED);
}

#[test]
fn quartiles_and_margin() {
    assert_eq!(lower_quartile(&[5, 1, 3]), 1);
    assert_eq!(lower_quartile(&[4, 1, 3, 2]), 1);
    // Five calls, three hit by interference: the second best is still a clean one.
    assert_eq!(lower_quartile(&[9000, 100, 8000, 104, 9500]), 104);
    assert_eq!(lower_quartile(&[u64::MAX, u64::MAX]), u64::MAX);
    assert_eq!(lower_quartile(&[]), u64::MAX);
    // Native 100 us: a pcoll candidate must be below 90 us at margin 0.1.
    let us = |v: &[u64]| v.iter().map(|x| x * 1000).collect::<Vec<u64>>();
    assert_eq!(winner(&us(&[100, 91, 95]), 0.1), 0);
    assert_eq!(winner(&us(&[100, 89, 95]), 0.1), 1);
    assert_eq!(winner(&us(&[100, 89, 50]), 0.1), 2);
    assert_eq!(winner(&us(&[100, 60, 60]), 0.1), 1); // ties: the earlier candidate
    assert_eq!(winner(&us(&[100, 99]), 0.0), 1);
    assert_eq!(winner(&us(&[100]), 0.1), 0);
    // And by MIN_GAIN_NS: 1.5 us against native's 2 us is 25% but only 0.5 us; 1.6 is not.
    assert_eq!(winner(&[2000, 1500], 0.1), 1);
    assert_eq!(winner(&[2000, 1501], 0.1), 0);
    assert_eq!(winner(&[1100, 900], 0.1), 0);
    // A race: the faster, pcoll's side paying RACE_PCOLL_COST_NS (its path beyond the timed
    // run; a native winner's calls are forwarded from C at the MPI's own cost).
    assert_eq!(race_winner(&[1800, 1650]), 1, "MPICH 5 allgatherv 8 B");
    assert_eq!(race_winner(&[4100, 4800]), 0, "MPICH 5 reduce 16 KiB cold");
    assert_eq!(race_winner(&[10_000, 9_850]), 1);
    assert_eq!(race_winner(&[10_000, 9_851]), 0);
    assert_eq!(race_winner(&[10_000, 10_000]), 0, "a tie is native's");
    assert_eq!(race_winner(&[1000, 850]), 1);
    assert_eq!(race_winner(&[1000, 851]), 0);
    assert_eq!(
        race_winner(&[600, 800]),
        0,
        "binomial bcast 8 B, Open MPI 5"
    );
    assert_eq!(race_winner(&us(&[100, 99])), 1);
    assert_eq!(race_winner(&us(&[100, 100])), 0);
    assert_eq!(race_winner(&[390, 10_355]), 0, "the 26.6x bcast");
    assert_eq!(race_winner(&[100]), 0);
}

/// Ranks that measured differently (here: each prefers another candidate by far) agree on
/// one winner: the maximum over ranks of each rank's time is the same vector on every rank.
#[test]
fn agreement_is_one_winner_whatever_each_rank_measured() {
    use Algorithm::*;
    let p = Params {
        timed: 3,
        ..Params::default()
    };
    let ranks = 4;
    let mut cells: Vec<Cell> = (0..ranks)
        .map(|_| Cell::new(cands(&[Native, Ring, Circulant]), p.timed))
        .collect();
    for (r, cell) in cells.iter_mut().enumerate() {
        loop {
            match cell.step() {
                Step::Run { cand, timed: true } => {
                    let t = if cand == r % 3 {
                        10
                    } else {
                        1000 + 7 * cand as u64
                    };
                    cell.record(cand, t);
                }
                Step::Run { .. } => {}
                Step::Agree => break,
                Step::Settled(_) => unreachable!(),
            }
        }
    }
    let local: Vec<usize> = cells.iter().map(|c| winner(&c.times(), p.margin)).collect();
    assert_eq!(local, vec![0, 1, 2, 0], "the ranks' own winners differ");
    let agreed: Vec<u64> = (0..3)
        .map(|i| cells.iter().map(|c| c.times()[i]).max().unwrap())
        .collect();
    let won: Vec<usize> = cells
        .iter_mut()
        .map(|c| c.settle(agreed.clone(), p.margin, false))
        .collect();
    assert!(won.iter().all(|&w| w == won[0]), "{won:?}");
}

fn resolver_parts(mpi: Mpi) -> (Config, Table) {
    (Config::default(), Table::builtin_for(mpi))
}

#[test]
fn candidates_native_first_current_then_model_eligible_only() {
    let (cfg, table) = resolver_parts(Mpi::OpenMpi);
    let r = Resolver::new(&cfg, &table, Mpi::OpenMpi);
    let call = CallFacts::new(Collective::Allreduce, 4, 1 << 20);
    let cur = Candidate {
        alg: Algorithm::Ring,
        segment: 4096,
    };
    let c = candidates(&r, &call, cur, 2);
    assert_eq!(c[0].alg, Algorithm::Native);
    assert_eq!(c[1], cur);
    assert_eq!(c.len(), 4);
    assert!(c[2..]
        .iter()
        .all(|x| x.alg != Algorithm::Ring && x.segment == 0));
    // A non-commutative op: only order-preserving algorithms.
    let nc = CallFacts {
        commutative: false,
        ..call
    };
    let native = Candidate {
        alg: Algorithm::Native,
        segment: 0,
    };
    let c = candidates(&r, &nc, native, 5);
    assert!(c.iter().all(|x| nc.eligible(x.alg).is_ok()), "{c:?}");
    assert_eq!(c.iter().filter(|x| x.alg == Algorithm::Native).count(), 1);
    // shm refused: never a candidate.
    let refused = CallFacts {
        shm_refused: true,
        ..call
    };
    assert!(candidates(&r, &refused, native, 9)
        .iter()
        .all(|x| x.alg != Algorithm::Shm));
}

#[test]
fn cells_key_what_every_rank_shares() {
    let call = CallFacts {
        root: 2,
        ..CallFacts::new(Collective::Reduce, 3, 3000)
    };
    let k = CellKey::of(&call).unwrap();
    assert_eq!(k.bytes(), (2048, 4096));
    assert!(k.root_nonzero && k.commutative);
    assert_eq!(CellKey::of(&CallFacts::new(Collective::Bcast, 1, 8)), None);
    assert_eq!(CellKey::of(&CallFacts::new(Collective::Bcast, 2, 0)), None);
    let b = CellKey::of(&CallFacts {
        root: 1,
        commutative: false,
        ..CallFacts::new(Collective::Bcast, 2, 8)
    })
    .unwrap();
    assert!(!b.root_nonzero && b.commutative, "bcast has neither");
}

#[test]
fn crowded_nodes_learn_cells_from_4_kib() {
    let key = |bytes| CellKey::of(&CallFacts::new(Collective::Bcast, 4, bytes)).unwrap();
    for b in [8, 64, 512, 2048, 4095] {
        assert!(!learned_when_crowded(&key(b)), "{b} B");
    }
    for b in [4096, 8191, 1 << 20] {
        assert!(learned_when_crowded(&key(b)), "{b} B");
    }
}

#[test]
fn learnable_unless_forced_or_measured_by_the_users_table() {
    let (mut cfg, table) = resolver_parts(Mpi::Mpich);
    let call = CallFacts::new(Collective::Reduce, 2, 1 << 20);
    assert!(learnable(
        &Resolver::new(&cfg, &table, Mpi::Mpich),
        &call,
        false
    ));
    // The built-in table measured p = 2, but it is not the user's: learned anyway.
    let r = Resolver::new(&cfg, &table, Mpi::Mpich);
    assert!(learnable(&r, &call, false));
    assert!(!learnable(&r, &call, true), "the user's table measured it");
    let t = Table::parse("[[reduce]]\np = 2\nbytes = [0, 1000]\nalgorithm = \"binomial\"\n[[reduce]]\nalgorithm = \"model\"\n", "t").unwrap();
    let r = Resolver::new(&cfg, &t, Mpi::Mpich);
    assert!(learnable(&r, &call, true), "a model rule measures nothing");
    let small = CallFacts::new(Collective::Reduce, 2, 600);
    assert!(!learnable(&r, &small, true));
    let straddle = CallFacts::new(Collective::Reduce, 2, 1020); // octave [512, 1024)
    assert!(!learnable(&r, &straddle, true));
    cfg.force[Collective::Reduce.index()] = Some(crate::Pick::Model);
    assert!(!learnable(
        &Resolver::new(&cfg, &t, Mpi::Mpich),
        &call,
        false
    ));
}

/// A pcoll winner runs the confirmation (its winner, every CONFIRM_EVERY-th call native, all
/// timed) and a second agreement keeps it only if it still beats native; native winners
/// settle at once.
#[test]
fn pcoll_winners_are_confirmed_native_ones_settle() {
    use Algorithm::*;
    let new = || Cell::new(cands(&[Native, Ring, Circulant]), 2);
    let explore = |c: &mut Cell| {
        while c.step() != Step::Agree {}
    };
    // Native wins the exploration: settled, no confirmation.
    let mut c = new();
    explore(&mut c);
    assert_eq!(c.settle(vec![100_000, 99_000, 98_000], 0.1, true), 0);
    assert_eq!(c.step(), Step::Settled(0));
    assert!(c.confirm.is_none());
    // Circulant wins: confirmation calls, then a second agreement.
    for (confirmed, kept) in [(50_000, 2), (95_000, 0)] {
        let mut c = new();
        explore(&mut c);
        assert_eq!(c.settle(vec![100_000, 90_000, 50_000], 0.1, true), 2);
        assert_eq!(c.decided(), None, "not decided while confirmed");
        let steps: Vec<Step> = (0..c.confirm_calls()).map(|_| c.step()).collect();
        let count = |want: Step| steps.iter().filter(|s| **s == want).count() as u64;
        let blocks = c.confirm_calls() / CONFIRM_BLOCK;
        let run = |cand, timed| Step::Run { cand, timed };
        assert_eq!(count(run(0, true)), blocks * (CONFIRM_NATIVE - 1));
        assert_eq!(count(run(0, false)), blocks);
        assert_eq!(count(run(2, false)), blocks);
        assert_eq!(
            count(run(2, true)),
            blocks * (CONFIRM_BLOCK - CONFIRM_NATIVE - 1)
        );
        // A block: the winner's calls, then native's; the first of each run untimed.
        let mut block = vec![run(2, false)];
        block.extend((1..CONFIRM_BLOCK - CONFIRM_NATIVE).map(|_| run(2, true)));
        block.push(run(0, false));
        block.extend((1..CONFIRM_NATIVE).map(|_| run(0, true)));
        assert_eq!(steps[..CONFIRM_BLOCK as usize], block[..]);
        assert_eq!(c.step(), Step::Agree);
        for (i, s) in steps.iter().enumerate() {
            if let Step::Run { cand, .. } = s {
                c.record(
                    *cand,
                    if *cand == 0 {
                        100_000
                    } else {
                        confirmed + i as u64
                    },
                );
            }
        }
        let t = c.times();
        assert_eq!(t[1], u64::MAX, "only native and the winner are timed again");
        assert_eq!(c.settle(t, 0.1, true), kept);
        assert_eq!(c.step(), Step::Settled(kept));
        let rec = table::Record::of(c_key(), &c, 0.1).unwrap();
        assert_eq!(rec.winner, kept);
        assert_eq!(
            rec.agreed,
            vec![100_000, 90_000, 50_000],
            "the exploration's times"
        );
        assert_eq!(rec.confirm.map(|x| x.0), Some(2));
        assert_eq!(Record::from_line(&rec.to_line()), Some(rec.clone()));
        assert!(
            rec.note()
                .contains("confirmed over the next 32 calls (blocks of 8"),
            "{}",
            rec.note()
        );
    }
    // A confirmation the run never finished: the exploration's winner, so noted.
    let mut c = new();
    explore(&mut c);
    c.settle(vec![100_000, 90_000, 50_000], 0.1, true);
    let rec = table::Record::of(c_key(), &c, 0.1).unwrap();
    assert_eq!((rec.winner, rec.confirm), (2, Some((2, None))));
    assert_eq!(Record::from_line(&rec.to_line()), Some(rec.clone()));
    assert!(rec.note().contains("did not finish"));
}

fn c_key() -> CellKey {
    CellKey::of(&CallFacts::new(Collective::Allreduce, 2, 1 << 20)).unwrap()
}

#[test]
fn blocked_exploration_times_each_candidate_after_its_own_calls() {
    use Algorithm::*;
    // 5 timed calls in blocks of 4 (one warm-up each): two rounds of blocks, 6 timed calls;
    // the rule's own algorithm (the last candidate) first.
    let mut c = Cell::new(cands(&[Native, Shm]), 5).blocked(4);
    assert_eq!(c.explore_calls(), 16);
    let steps: Vec<Step> = (0..16).map(|_| c.step()).collect();
    for (n, s) in steps.iter().enumerate() {
        let want = Step::Run {
            cand: [1, 0][(n / 4) % 2],
            timed: n % 4 != 0,
        };
        assert_eq!(*s, want, "call {n}");
    }
    assert_eq!(c.step(), Step::Agree);
    // A pcoll winner (not a clear one) is confirmed as in round-robin cells.
    assert_eq!(c.settle(vec![100_000, 60_000], 0.1, true), 1);
    assert!(c.outcome.is_none() && c.confirm.is_some());
    assert_eq!(
        c.step(),
        Step::Run {
            cand: 1,
            timed: false
        }
    );
    assert_eq!(c.confirm_calls(), 32);
    for _ in 1..32 {
        assert!(matches!(c.step(), Step::Run { .. }));
    }
    assert_eq!(c.step(), Step::Agree);
    // Blocks of 1 are the round-robin schedule.
    let rr = Cell::new(cands(&[Native, Shm]), 5).blocked(1);
    assert_eq!(rr.explore_calls(), 12);
}

/// An exploration in blocks keeps a pcoll winner of at most half native's time unconfirmed
/// (native at least `CLEAR_MIN_NS`), unless the node is crowded; every other pcoll winner is
/// confirmed.
#[test]
fn clear_wins_of_blocked_explorations_skip_the_confirmation() {
    use Algorithm::*;
    let half = CLEAR_MIN_NS / CLEAR_WIN;
    // (agreed, block, not crowded, incumbent, confirmed?)
    let cases = [
        (vec![CLEAR_MIN_NS, half], 4, true, true, false),
        (vec![CLEAR_MIN_NS, half], 4, true, false, false),
        (
            vec![4 * CLEAR_MIN_NS, 2 * CLEAR_MIN_NS + 1],
            4,
            true,
            true,
            true,
        ),
        (vec![CLEAR_MIN_NS - 2, half - 1], 4, true, true, true),
        (vec![CLEAR_MIN_NS, half], 4, false, true, true),
        (vec![CLEAR_MIN_NS, half], 1, true, true, true),
    ];
    for (agreed, block, on, incumbent, confirmed) in cases {
        let mut c = Cell::new(cands(&[Native, Shm]), 5)
            .blocked(block)
            .crowded(!on);
        if incumbent {
            c = c.incumbent();
        }
        while c.step() != Step::Agree {}
        let what = format!(
            "{agreed:?} block {block} crowded {} incumbent {incumbent}",
            !on
        );
        assert_eq!(c.settle(agreed, 0.1, true), 1, "{what}");
        assert_eq!(c.confirm.is_some(), confirmed, "{what}");
        assert_eq!(c.decided().is_none(), confirmed, "{what}");
        if !confirmed {
            assert_eq!(c.step(), Step::Settled(1), "{what}");
            let rec = table::Record::of(c_key(), &c, 0.1).unwrap();
            assert_eq!((rec.winner, rec.confirm), (1, None));
            assert!(rec.note().contains("kept unconfirmed"), "{}", rec.note());
        }
    }
    // A native winner is never confirmed, clear or not.
    let mut c = Cell::new(cands(&[Native, Shm]), 5)
        .blocked(4)
        .crowded(false);
    while c.step() != Step::Agree {}
    assert_eq!(c.settle(vec![half, CLEAR_MIN_NS], 0.1, true), 0);
    assert!(c.confirm.is_none() && c.decided().is_some());
}

/// Each rank's time of a candidate is the lower quartile of its timed calls, the median on a
/// crowded node.
#[test]
fn crowded_cells_time_candidates_by_their_median() {
    use Algorithm::*;
    // Native steady at 10 us; shm fast in its luckiest calls only.
    let (nat, shm) = (
        [10_000u64; 6],
        [3_000u64, 3_000, 20_000, 20_000, 20_000, 20_000],
    );
    for (crowded, want, won) in [
        (false, vec![10_000, 3_000], 1),
        (true, vec![10_000, 20_000], 0),
    ] {
        let mut c = Cell::new(cands(&[Native, Shm]), 5)
            .blocked(4)
            .crowded(crowded)
            .incumbent();
        for (n, s) in nat.iter().zip(&shm) {
            c.record(0, *n);
            c.record(1, *s);
        }
        assert_eq!(c.times(), want, "crowded {crowded}");
        assert_eq!(race_winner(&c.times()), won);
    }
    assert_eq!(median(&[4, 1, 3, 2]), 2);
    assert_eq!(median(&[5, 1, 3]), 3);
    assert_eq!(median(&[]), u64::MAX);
}

/// A raced cell is raced again after `racing_again` calls of its winner, counted by `step`
/// and by the paths that run it without `step` alike; the period doubles while the winner
/// stays and starts over when it changes; 0 never races again.
#[test]
fn raced_cells_race_again_counting_every_winner_call() {
    use std::sync::atomic::Ordering::Relaxed;
    use Algorithm::*;
    // Runs the cell's calls up to its next agreement (none may be settled), then settles.
    let race = |c: &mut Cell, agreed: Vec<u64>| -> usize {
        loop {
            match c.step() {
                Step::Agree => break,
                Step::Run { .. } => {}
                s => panic!("{s:?} while racing"),
            }
        }
        c.settle(agreed, 0.1, true)
    };
    let slow_shm = || vec![100_000, 200_000];
    // 0.6x: a win, not a clear one (kept only after its confirmation).
    let fast_shm = || vec![100_000, 60_000];
    let mut c = Cell::new(cands(&[Native, Shm]), 5)
        .blocked(4)
        .racing_again(8);
    assert_eq!(race(&mut c, slow_shm()), 0);
    assert_eq!((c.until, c.races, c.changed), (8, 1, true));
    // Eight winner calls, half through step, half on a fast path (which counts them itself).
    for i in 0..8 {
        if i % 2 == 0 {
            assert_eq!(c.step(), Step::Settled(0));
        } else {
            assert_eq!(c.fast().map(|x| x.alg), Some(Native));
            c.settled.fetch_add(1, Relaxed);
        }
    }
    assert_eq!(
        c.fast(),
        None,
        "due: the next call must reach step, on every path"
    );
    assert_eq!(c.decided().map(|x| x.alg), Some(Native));
    // The second race keeps native: the period doubles.
    assert_eq!(race(&mut c, slow_shm()), 0);
    assert_eq!((c.until, c.races, c.changed), (8 + 16, 2, false));
    for _ in 0..16 {
        assert_eq!(c.step(), Step::Settled(0));
    }
    // The third: shm wins the exploration, then its confirmation; the period starts over.
    assert_eq!(race(&mut c, fast_shm()), 1);
    assert!(
        c.fast().is_none() && c.decided().is_none(),
        "being confirmed"
    );
    assert_eq!(race(&mut c, fast_shm()), 1);
    assert_eq!((c.until, c.races, c.changed), (24 + 8, 3, true));
    assert_eq!(c.step(), Step::Settled(1));
    // Never raced again without a period (PCOLL_RACE_AGAIN=0), nor a PCOLL_LEARN cell.
    let mut once = Cell::new(cands(&[Native, Shm]), 5).blocked(4);
    assert_eq!(race(&mut once, slow_shm()), 0);
    assert_eq!(once.until, u64::MAX);
    for _ in 0..10_000 {
        assert_eq!(once.step(), Step::Settled(0));
    }
    // The variable.
    let env =
        |v: &str| std::collections::HashMap::from([("PCOLL_RACE_AGAIN".to_string(), v.into())]);
    assert_eq!(Config::default().race_again(), DEFAULT_RACE_AGAIN);
    assert_eq!(Config::from_map(&env("0")).0.race_again(), 0);
    assert_eq!(Config::from_map(&env("100")).0.race_again(), 100);
    let (c, w) = Config::from_map(&env("often"));
    assert!(
        c.race_again() == DEFAULT_RACE_AGAIN && w.len() == 1 && w[0].contains("PCOLL_RACE_AGAIN"),
        "{w:?}"
    );
}

#[test]
fn raced_where_the_rule_says_race_for_blocking_calls_only() {
    let t = Table::parse(
        "[[reduce]]\np = 2\nbytes = [\"16KiB\", \"1MiB\"]\nalgorithm = \"shm\"\nrace = true\n[[reduce]]\nalgorithm = \"shm\"\n",
        "t",
    )
    .unwrap();
    let mut cfg = Config::default();
    let call = CallFacts::new(Collective::Reduce, 2, 1 << 16);
    let r = |cfg: &Config| raced(&Resolver::new(cfg, &t, Mpi::OpenMpi), &call);
    assert!(r(&cfg));
    let at = |bytes, p| {
        let c = CallFacts::new(Collective::Reduce, p, bytes);
        raced(&Resolver::new(&cfg, &t, Mpi::OpenMpi), &c)
    };
    assert!(
        !at(1 << 20, 2),
        "past the rule: the next rule does not race"
    );
    assert!(!at(1 << 16, 3), "another p");
    let nb = CallFacts {
        nonblocking: true,
        ..call
    };
    assert!(!raced(&Resolver::new(&cfg, &t, Mpi::OpenMpi), &nb));
    // Whatever outranks the table, or PCOLL_RACE=0, runs unraced.
    cfg.race_off = true;
    assert!(!r(&cfg));
    cfg.race_off = false;
    cfg.force[Collective::Reduce.index()] = Some(Algorithm::Binomial.into());
    assert!(!r(&cfg));
    cfg.force[Collective::Reduce.index()] = None;
    cfg.disable = true;
    assert!(!r(&cfg));
    // The variable: 0 turns racing off, a bad value warns and keeps it on.
    let env = |v: &str| std::collections::HashMap::from([("PCOLL_RACE".to_string(), v.into())]);
    assert!(Config::from_map(&env("0")).0.race_off);
    let (c, w) = Config::from_map(&env("maybe"));
    assert!(
        !c.race_off && w.len() == 1 && w[0].contains("PCOLL_RACE"),
        "{w:?}"
    );
}

/// On a crowded node the model's pcoll picks beyond the table race native (from 4 KiB);
/// rules naming an algorithm keep their own `race`, and an uncrowded node races nothing the
/// table does not say.
#[test]
fn crowded_nodes_race_the_models_pcoll_picks() {
    let t = Table::parse(
        "[[reduce]]\np = 4\nbytes = [0, \"32KiB\"]\nalgorithm = \"native\"\n[[reduce]]\np = 5\nalgorithm = \"model\"\n",
        "t",
    )
    .unwrap();
    let cfg = Config::default();
    let r = Resolver::new(&cfg, &t, Mpi::OpenMpi);
    let mut pcoll = 0;
    for p in [4usize, 5, 6] {
        for bytes in (10..24).map(|k| 1usize << k) {
            let call = CallFacts::new(Collective::Reduce, p, bytes);
            assert!(!raced(&r, &call), "uncrowded p {p} {bytes} B");
            let crowded = r.with_crowded(true);
            let best = crowded.model_pick(&call).best;
            let ruled = p == 4 && bytes < 32 << 10;
            let want = !ruled && bytes >= CROWDED_MIN_BYTES && best != Algorithm::Native;
            assert_eq!(raced(&crowded, &call), want, "p {p} {bytes} B: {best}");
            pcoll += usize::from(want);
        }
    }
    assert!(pcoll > 0, "the model picks a pcoll algorithm somewhere");
    // Outranked as a rule's race is.
    let off = Config {
        race_off: true,
        ..Config::default()
    };
    let call = CallFacts::new(Collective::Reduce, 6, 1 << 20);
    assert!(!raced(
        &Resolver::new(&off, &t, Mpi::OpenMpi).with_crowded(true),
        &call
    ));
}

#[test]
fn race_rules_parse_round_trip_and_name_what_cannot_race() {
    let t = Table::parse(
        "[[allreduce]]\nbytes = [\"128KiB\"]\nalgorithm = \"shm\"\nrace = true\n",
        "t",
    )
    .unwrap();
    assert!(t.races() && t.rules(Collective::Allreduce)[0].race);
    let again = Table::parse(&t.to_toml(), "again").unwrap();
    assert!(again.rules(Collective::Allreduce)[0].race);
    // Every built-in table races each rule that picks one of pcoll's algorithms for a
    // blocking call at p = 2-3 (measured on one machine; kept only where it still wins), but
    // Intel MPI's reduce at a root other than 0, where its native runs another algorithm
    // (twice its root-0 time at 8 MiB) and a race's native blocks cost 4-7 ms a call.
    for mpi in [
        Mpi::OpenMpi,
        Mpi::Mpich,
        Mpi::OpenMpi5,
        Mpi::Mpich5,
        Mpi::IntelMpi,
    ] {
        let t = Table::builtin_for(mpi);
        for coll in Collective::ALL {
            for rule in t.rules(coll) {
                if matches!(rule.algorithm, crate::Pick::Alg(a) if a != crate::Algorithm::Native)
                    && rule.p.contains(2)
                    && rule.cond.nonblocking != Some(true)
                    && !(mpi == Mpi::IntelMpi && rule.cond.root_zero == Some(false))
                {
                    assert!(rule.race, "{mpi:?} {coll} line {}", rule.line);
                }
            }
        }
    }
    for (alg, form) in [
        ("native", ""),
        ("model", ""),
        ("shm", "form = \"nonblocking\"\n"),
    ] {
        let text = format!("[[reduce]]\n{form}algorithm = \"{alg}\"\nrace = true\n");
        let e = Table::parse(&text, "bad.toml").unwrap_err();
        assert!(e.contains("bad.toml:") && e.contains("race"), "{e}");
    }
    assert!(Table::parse("[[reduce]]\nalgorithm = \"shm\"\nrace = 1\n", "t").is_err());
}
