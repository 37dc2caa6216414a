//! End-to-end runs of `pcoll-bench` and `pcoll-tune` under the MPI this crate is built
//! against (Open MPI: mpirun.openmpi; MPICH: mpiexec.mpich, p <= 2 because MPICH busy-polls
//! when oversubscribed). The bench's `--check` compares every pcoll result with native and
//! native with a sequential oracle; these tests read its JSON and require zero mismatches.
//! `MPIEXEC` names another launcher of the same ABI (the registry MPIs' `mpiexec`, as
//! `make test` sets it). Skipped (with a message) when the launcher is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn launcher(np: usize) -> Option<Vec<String>> {
    let mpi = pcoll_tools::bench::mpi::abi_name();
    let own = std::env::var("MPIEXEC").ok().filter(|s| !s.is_empty());
    let (prog, args): (&str, Vec<String>) = if mpi == "mpich" {
        (
            own.as_deref().unwrap_or("mpiexec.mpich"),
            vec!["-n".into(), np.to_string()],
        )
    } else {
        (
            own.as_deref().unwrap_or("mpirun.openmpi"),
            vec![
                "--allow-run-as-root".into(),
                "--oversubscribe".into(),
                "-np".into(),
                np.to_string(),
            ],
        )
    };
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {prog}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        eprintln!("skipping: {prog} not installed");
        return None;
    }
    let mut v = vec![prog.to_string()];
    v.extend(args);
    Some(v)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pcoll-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// One launch at a time: the tests of this file run on parallel threads, and two
/// `mpirun.openmpi` (4.1) started at once when no other job holds its session directory race to
/// create `/tmp/ompi.<host>.<uid>` ("A call to mkdir was unable to create the desired
/// directory ... File exists", open-mpi/ompi#8510; seen in a fresh clone's `make test`). Two
/// jobs of 2 ranks on the 2 cores would also oversubscribe them.
static LAUNCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `bin` with `args` on `np` ranks; returns stdout (panics with stderr on failure).
fn run(np: usize, bin: &str, args: &[&str]) -> Option<String> {
    let _one = LAUNCH.lock().unwrap_or_else(|e| e.into_inner());
    let mut l = launcher(np)?;
    let exe = l.remove(0);
    let out = Command::new(exe)
        .args(&l)
        .arg(bin)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("launcher runs");
    let so = String::from_utf8_lossy(&out.stdout).to_string();
    let se = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "{bin} {args:?} on {np} ranks failed\nstdout:\n{so}\nstderr:\n{se}"
    );
    Some(so)
}

/// `pcoll-bench` on `np` ranks with `args`, then `--iters iters --warmup 1 --check --quiet
/// --json json` (every test checks results against native and reads the JSON).
fn bench(np: usize, iters: &str, json: &Path, args: &[&str]) -> Option<String> {
    let mut all = args.to_vec();
    let j = json.to_str().unwrap();
    all.extend([
        "--iters", iters, "--warmup", "1", "--check", "--quiet", "--json", j,
    ]);
    run(np, env!("CARGO_BIN_EXE_pcoll-bench"), &all)
}

fn json(path: &PathBuf) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every row checked and exact; native rows have ratio 1; returns (collective, p, bytes,
/// variant) tuples.
fn checked_rows(doc: &serde_json::Value) -> Vec<(String, u64, u64, String)> {
    let rows = doc["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    rows.iter()
        .map(|r| {
            let id = format!("{r}");
            assert_eq!(r["mismatches"].as_i64(), Some(0), "{id}");
            assert_eq!(r["errors"].as_i64(), Some(0), "{id}");
            assert!(r["median_us"].as_f64().unwrap() > 0.0, "{id}");
            assert!(r["min_us"].as_f64() <= r["median_us"].as_f64(), "{id}");
            assert!(r["median_us"].as_f64() <= r["p90_us"].as_f64(), "{id}");
            if r["variant"] == "native" {
                assert!((r["ratio"].as_f64().unwrap() - 1.0).abs() < 1e-12, "{id}");
            }
            (
                r["collective"].as_str().unwrap().to_string(),
                r["p"].as_u64().unwrap(),
                r["bytes"].as_u64().unwrap(),
                r["variant"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn bench_all_collectives_checked() {
    let j = tmp("all.json");
    let svg = tmp("all.svg");
    let np = 2;
    let Some(out) = bench(
        np,
        "3",
        &j,
        &[
            "--collectives",
            "reduce,allreduce,reduce_scatter,allgatherv",
            "--sizes",
            "8,1k,100000",
            "--p",
            "1,2",
            "--plot",
            svg.to_str().unwrap(),
        ],
    ) else {
        return;
    };
    let doc = json(&j);
    let rows = checked_rows(&doc);
    // Hot by default; every case of p = 2 has a floor (p = 1 reduce_scatter and allgatherv
    // too: the call's own copy).
    for r in doc["rows"].as_array().unwrap() {
        assert_eq!(r["buffers"], "hot", "{r}");
        assert!(r["floor_us"].as_f64().is_some_and(|f| f > 0.0), "{r}");
    }
    for coll in ["reduce", "allreduce", "reduce_scatter", "allgatherv"] {
        for p in [1u64, 2] {
            for bytes in [8u64, 1024, 100000] {
                // The sizes are byte counts of doubles, so each is measured exactly.
                let vs: Vec<&str> = rows
                    .iter()
                    .filter(|r| r.0 == coll && r.1 == p && r.2 == bytes)
                    .map(|r| r.3.as_str())
                    .collect();
                assert_eq!(vs.first(), Some(&"native"), "{coll} p={p} {bytes}: {vs:?}");
                // binomial exists for every collective in every build.
                assert!(vs.contains(&"binomial"), "{coll} p={p} {bytes}: {vs:?}");
                assert!(vs.contains(&"auto"), "{coll} p={p} {bytes}: {vs:?}");
            }
        }
    }
    assert!(out.contains("# allgatherv  p=2"), "{out}");
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.contains("allgatherv, p = 2"));
}

#[test]
fn bench_cold_buffers_and_floor() {
    // --cold: every call on buffers rotated over >= 96 MiB per rank, said in the header, the
    // CSV and the JSON; the floor (one core's bound on rank 0) beside every row.
    let (j, c) = (tmp("cold.json"), tmp("cold.csv"));
    let Some(out) = bench(
        2,
        "3",
        &j,
        &[
            "--collectives",
            "reduce,allreduce,bcast,allgatherv",
            "--sizes",
            "64k,1m",
            "--algorithms",
            "auto,shm",
            "--cold",
            "--csv",
            c.to_str().unwrap(),
        ],
    ) else {
        return;
    };
    let doc = json(&j);
    let rows = checked_rows(&doc);
    assert_eq!(rows.len(), 4 * 2 * 3, "{rows:?}");
    assert_eq!(doc["meta"]["buffers"], "cold");
    for r in doc["rows"].as_array().unwrap() {
        assert_eq!(r["buffers"], "cold", "{r}");
        let floor = r["floor_us"].as_f64().unwrap();
        let x = r["x_floor"].as_f64().unwrap();
        assert!(floor > 0.0 && floor.is_finite(), "{r}");
        assert!(
            (x - r["median_us"].as_f64().unwrap() / floor).abs() < 1e-9,
            "{r}"
        );
    }
    // The floor of a case is the same in every row of it, and 1 MiB costs more than 64 KiB.
    let floor = |coll: &str, bytes: u64| -> Vec<f64> {
        doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["collective"] == coll && r["bytes"].as_u64() == Some(bytes))
            .map(|r| r["floor_us"].as_f64().unwrap())
            .collect()
    };
    for coll in ["reduce", "allreduce", "bcast", "allgatherv"] {
        let (a, b) = (floor(coll, 65536), floor(coll, 1 << 20));
        assert!(a.windows(2).all(|w| w[0] == w[1]) && b.windows(2).all(|w| w[0] == w[1]));
        assert!(b[0] > a[0], "{coll}: {a:?} {b:?}");
    }
    // Reduce and allreduce share their floor (z = x + y over the vector, cached).
    assert_eq!(floor("reduce", 1 << 20)[0], floor("allreduce", 1 << 20)[0]);
    let csv = std::fs::read_to_string(&c).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",mismatches,buffers,floor_us,x_floor"),
        "{csv}"
    );
    assert!(csv.lines().skip(1).all(|l| l.contains(",cold,")), "{csv}");
    let fields = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == fields), "{csv}");
    assert!(out.contains("# buffers: cold"), "{out}");
    assert!(out.contains("# reduce  p=2  cold buffers"), "{out}");
    assert!(out.contains("x_fl"), "{out}");
}

#[test]
fn bench_other_types_and_ops_checked() {
    // Integer and one-byte types, non-sum ops, odd sizes (counts not divisible by p).
    for (dt, op, colls) in [
        ("int", "max", "allreduce,reduce_scatter"),
        ("float", "prod", "reduce,allreduce"),
        ("long", "min", "reduce,allgatherv"),
        ("char", "sum", "allreduce,allgatherv"),
    ] {
        let j = tmp(&format!("{dt}.json"));
        let Some(_) = bench(
            if pcoll_tools::bench::mpi::abi_name() == "mpich" {
                2
            } else {
                3
            },
            "2",
            &j,
            &[
                "--collectives",
                colls,
                "--datatype",
                dt,
                "--op",
                op,
                "--sizes",
                "1,13,4099",
                "--algorithms",
                "binomial,ring,auto,passthru",
            ],
        ) else {
            return;
        };
        let rows = checked_rows(&json(&j));
        assert!(rows.iter().any(|r| r.3 == "binomial"), "{dt} {op}");
        assert!(rows.iter().any(|r| r.3 == "passthru"), "{dt} {op}");
        // ring is not a reduce algorithm: it must not appear there.
        assert!(
            !rows.iter().any(|r| r.0 == "reduce" && r.3 == "ring"),
            "{dt} {op}"
        );
    }
}

#[test]
fn bench_segments_checked() {
    // Run-time segment sizes (pcoll_segment) for every segmented algorithm, checked against
    // native; algorithms without segments get no `@size` variants.
    let j = tmp("seg.json");
    let Some(out) = bench(
        2,
        "2",
        &j,
        &[
            "--collectives",
            "reduce,allreduce,reduce_scatter,allgatherv",
            "--sizes",
            "4k,100000",
            "--algorithms",
            "pipeline,greedy,circulant,ring,auto",
            "--segments",
            "1k,16k",
        ],
    ) else {
        return;
    };
    let rows = checked_rows(&json(&j));
    let has = |coll: &str, v: &str| rows.iter().any(|r| r.0 == coll && r.3 == v);
    for v in [
        "pipeline@1KiB",
        "pipeline@16KiB",
        "greedy@1KiB",
        "circulant@16KiB",
    ] {
        assert!(has("reduce", v), "reduce {v}: {out}");
    }
    assert!(has("allreduce", "greedy@16KiB") && has("allreduce", "circulant@1KiB"));
    assert!(has("reduce_scatter", "circulant@1KiB"));
    for (coll, v) in [
        ("allreduce", "ring@1KiB"),
        ("reduce_scatter", "ring@1KiB"),
        ("allgatherv", "circulant@1KiB"),
    ] {
        assert!(!has(coll, v), "{coll} {v}");
    }
    assert!(out.contains("greedy@16KiB"), "{out}");
}

#[test]
fn tune_writes_a_table() {
    let out = tmp("tuning.toml");
    let Some(stdout) = run(
        2,
        env!("CARGO_BIN_EXE_pcoll-tune"),
        &[
            "--collectives",
            "allreduce,allgatherv",
            "--sizes",
            "8,64k",
            "--iters",
            "3",
            "--remeasure-iters",
            "4",
            "--budget",
            "0.3",
            // Every segmented algorithm qualifies for the segment sizes, however slow.
            "--segment-margin",
            "100",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
    ) else {
        return;
    };
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(stdout, text);
    assert!(text.contains("[model]\nalpha = "), "{text}");
    for coll in ["allreduce", "allgatherv"] {
        assert!(text.contains(&format!("[[{coll}]]")), "{text}");
    }
    // Measured rules are bounded to the measured p = 2; every collective ends with `model`.
    assert!(!text.contains("\"inf\"]\nbytes"), "{text}");
    assert!(text.contains("p = [2, 3]"), "{text}");
    let table = pcoll::tuning::Table::parse(&text, "test").expect("the written table parses");
    for coll in pcoll::Collective::ALL {
        let last = table.rules(coll).last().expect("a closing rule");
        assert_eq!(last.algorithm, pcoll::Pick::Model, "{coll}");
        assert!(last.p.is_any() && last.bytes.is_any(), "{coll}");
    }
    // Every measured rule carries its measurement.
    let rules = text.matches("[[").count();
    assert_eq!(
        text.matches("# measured: ").count(),
        rules - pcoll::Collective::ALL.len(),
        "{text}"
    );
    // Segment sizes were tried in the 64 KiB allreduce cell (greedy or circulant).
    assert!(
        text.contains("Segment sizes: in 1 cells of >= 64K B"),
        "{text}"
    );
    // The model is positive and finite.
    for key in ["alpha", "beta", "gamma"] {
        let v: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .unwrap()
            .parse()
            .unwrap();
        assert!(v > 0.0 && v.is_finite(), "{key} = {v}");
    }
}
