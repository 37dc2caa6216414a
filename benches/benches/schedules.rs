//! Cost of computing one rank's circulant receive + send schedule (ALGORITHMS.md §5.3–5.4):
//! the O(log p) algorithms (paper Algorithms 4–6) against
//! * `q2`: the simple O(q²) send schedule of §5.4 (one receive-schedule look-up per round),
//! * `naive_table`: the naive construction that computes every rank's receive schedule
//!   (O(p log p) time and memory) and reads `R_r` and `S_r[k] = R_{r+s[k]}[k]` from the table
//!   (only p = 2^10 and 2^20: at 2^30 it would need ~240 GB).
//!
//! `cargo bench -p pcoll-benches`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use pcoll::sched::circulant::{all_recv, recv_schedule, send_schedule, skips};
use std::time::Duration;

fn rank_of(p: usize) -> usize {
    // an unremarkable rank in the upper half
    p / 2 + p / 7 + 1
}

fn fast(c: &mut Criterion) {
    let mut g = c.benchmark_group("circulant_one_rank");
    g.measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    for e in [10u32, 20, 30] {
        let p = 1usize << e;
        let r = rank_of(p);
        g.bench_with_input(BenchmarkId::new("alg4_6", format!("2^{e}")), &p, |b, &p| {
            b.iter(|| {
                let rs = recv_schedule(black_box(p), black_box(r));
                let ss = send_schedule(black_box(p), black_box(r));
                (rs, ss)
            })
        });
        g.bench_with_input(BenchmarkId::new("q2", format!("2^{e}")), &p, |b, &p| {
            b.iter(|| {
                let p = black_box(p);
                let s = skips(p);
                let rs = recv_schedule(p, r);
                let ss: Vec<i64> = (0..s.len() - 1)
                    .map(|k| recv_schedule(p, (r + s[k]) % p)[k])
                    .collect();
                (rs, ss)
            })
        });
    }
    g.finish();
}

fn naive(c: &mut Criterion) {
    let mut g = c.benchmark_group("circulant_one_rank");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(200));
    for e in [10u32, 20] {
        let p = 1usize << e;
        let r = rank_of(p);
        g.bench_with_input(
            BenchmarkId::new("naive_table", format!("2^{e}")),
            &p,
            |b, &p| {
                b.iter(|| {
                    let p = black_box(p);
                    let s = skips(p);
                    let table = all_recv(p);
                    let ss: Vec<i64> = (0..s.len() - 1).map(|k| table[(r + s[k]) % p][k]).collect();
                    (table[r].clone(), ss)
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, fast, naive);
criterion_main!(benches);
