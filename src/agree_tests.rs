use super::*;
use crate::config::Config;
use crate::tuning::Table;
use std::collections::HashMap;

const TABLE_A: &str = "[[allreduce]]\nalgorithm = \"ring\"\n";
const TABLE_B: &str = "[[allreduce]]\nalgorithm = \"circulant\"\n";

/// A rank's inputs from a map of variables and a map of readable files.
fn inputs(env: &[(&str, &str)], files: &[(&str, &str)]) -> Inputs {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let files: HashMap<String, String> = files
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Inputs::read(
        &|k| env.get(k).cloned(),
        &|p| {
            files
                .get(p.to_str().unwrap())
                .cloned()
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        },
        "Open MPI v4.1.4",
    )
}

/// What an allgather of the digests leaves on every rank.
fn gathered(ranks: &[Inputs]) -> Vec<u64> {
    ranks.iter().flat_map(|r| r.digest()).collect()
}

#[test]
fn equal_inputs_agree_whatever_the_path() {
    let a = inputs(&[("PCOLL_TUNING", "/a/t.toml")], &[("/a/t.toml", TABLE_A)]);
    let b = inputs(&[("PCOLL_TUNING", "/b/t.toml")], &[("/b/t.toml", TABLE_A)]);
    assert!(compare(&gathered(&[a.clone(), b, a])).is_empty());
    let none = inputs(&[("PCOLL_SEGMENT", " ")], &[]);
    assert_eq!(
        none.digest(),
        inputs(&[], &[]).digest(),
        "empty counts as unset"
    );
}

#[test]
fn each_difference_is_named_with_its_ranks() {
    let ok = inputs(&[("PCOLL_TUNING", "/t")], &[("/t", TABLE_A)]);
    let missing = inputs(&[("PCOLL_TUNING", "/t")], &[]);
    let other = inputs(
        &[("PCOLL_TUNING", "/t"), ("PCOLL_SEGMENT", "64KiB")],
        &[("/t", TABLE_B)],
    );
    let d = compare(&gathered(&[
        missing.clone(),
        ok.clone(),
        ok.clone(),
        other.clone(),
    ]));
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].component, "PCOLL_TUNING");
    let ranks: Vec<Vec<usize>> = d[0].groups.iter().map(|g| g.1.clone()).collect();
    assert_eq!(ranks, vec![vec![0], vec![1, 2], vec![3]]);
    assert_eq!(d[0].groups[0].0, UNREADABLE);
    assert_eq!(d[1].component, "PCOLL_SEGMENT");
    assert_eq!(d[1].groups[1].1, vec![3]);
    let w = warning(&d, &missing);
    assert!(
        w.starts_with("settings differ across ranks: PCOLL_TUNING (rank 0: \"/t\" unreadable"),
        "{w}"
    );
    assert!(
        w.contains("ranks 1-2: another table; rank 3: another table (#2))"),
        "{w}"
    );
    assert!(
        w.contains("PCOLL_SEGMENT (ranks 0-2: unset; rank 3: another value)"),
        "{w}"
    );
    assert!(w.ends_with("every rank uses rank 0's settings"), "{w}");
}

#[test]
fn forcing_on_one_rank_and_the_mpi_library_differ() {
    let plain = inputs(&[], &[]);
    let forced = inputs(
        &[("PCOLL_ALLREDUCE", "ring"), ("PCOLL_BCAST", "binomial")],
        &[],
    );
    let d = compare(&gathered(&[forced.clone(), plain.clone(), plain.clone()]));
    let names: Vec<&str> = d.iter().map(|d| d.component).collect();
    assert_eq!(names, vec!["PCOLL_ALLREDUCE", "PCOLL_BCAST"]);
    assert_eq!(
        warning(&d[..1], &forced),
        "settings differ across ranks: PCOLL_ALLREDUCE (rank 0: \"ring\"; ranks 1-2: unset); every rank uses rank 0's settings"
    );
    let mut mpich = plain.clone();
    mpich.mpi = "MPICH Version: 4.0.2".into();
    let d = compare(&gathered(&[plain, mpich]));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].component, "the MPI library");
}

#[test]
fn log_and_stats_do_not_steer() {
    let a = inputs(&[("PCOLL_LOG", "debug"), ("PCOLL_STATS", "1")], &[]);
    assert!(compare(&gathered(&[a, inputs(&[], &[])])).is_empty());
}

#[test]
fn encode_decode_round_trip() {
    for i in [
        inputs(&[], &[]),
        inputs(&[("PCOLL_TUNING", "/x")], &[]),
        inputs(
            &[
                ("PCOLL_TUNING", "/t"),
                ("PCOLL_REDUCE", "pipeline"),
                ("PCOLL_DISABLE", "0"),
            ],
            &[("/t", TABLE_A)],
        ),
    ] {
        let bytes = i.encode();
        assert_eq!(Inputs::decode(&bytes), Some(i.clone()));
        assert_eq!(Inputs::decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(Inputs::decode(&longer), None);
    }
}

/// Every rank that decides from rank 0's inputs gets rank 0's configuration and table.
#[test]
fn rank0_inputs_give_one_config_and_table() {
    let r0 = inputs(
        &[
            ("PCOLL_TUNING", "/t"),
            ("PCOLL_ALLREDUCE", "ring"),
            ("PCOLL_SEGMENT", "8192"),
        ],
        &[("/t", TABLE_B)],
    );
    // Rank 1's own variables: PCOLL_LOG is its own, the steering ones come from rank 0.
    let local: HashMap<&str, &str> = [("PCOLL_SEGMENT", "4096"), ("PCOLL_LOG", "info")].into();
    let lookup = |k: &str| match r0.var(k) {
        Some(v) => v,
        None => local.get(k).map(|s| s.to_string()),
    };
    let (cfg, warns) = Config::from_lookup(&lookup);
    assert!(warns.is_empty());
    assert_eq!(cfg.segment, Some(8192));
    assert_eq!(cfg.log.as_deref(), Some("info"));
    let (t, w) = cfg.table_from(&r0.table, Table::builtin());
    assert!(w.is_empty());
    let want = Table::parse(TABLE_B, "/t").unwrap();
    assert_eq!(format!("{t:?}"), format!("{want:?}"));
    let bad = cfg.table_from(&TableRead::Unreadable("gone".into()), Table::builtin());
    assert_eq!(format!("{:?}", bad.0), format!("{:?}", Table::builtin()));
    assert!(
        bad.1[0].contains("cannot read the file (gone)"),
        "{:?}",
        bad.1
    );
}

#[test]
fn without_settings_keeps_only_disable() {
    let i = inputs(
        &[
            ("PCOLL_TUNING", "/t"),
            ("PCOLL_REDUCE", "ring"),
            ("PCOLL_DISABLE", "1"),
        ],
        &[("/t", TABLE_A)],
    );
    let (o, dropped) = i.without_settings();
    assert_eq!(dropped, vec!["PCOLL_TUNING", "PCOLL_REDUCE"]);
    assert_eq!(o.table, TableRead::Unset);
    assert_eq!(o.var("PCOLL_REDUCE"), Some(None));
    assert_eq!(o.var("PCOLL_DISABLE"), Some(Some("1".into())));
    assert_eq!(o.var("PCOLL_LOG"), None);
}

#[test]
fn rank_lists() {
    assert_eq!(rank_list(&[0]), "rank 0");
    assert_eq!(rank_list(&[1, 2, 3, 5]), "ranks 1-3,5");
    let many: Vec<usize> = (0..40).step_by(2).collect();
    assert_eq!(rank_list(&many), "ranks 0,2,4,6,8,10,12,14,... (20 ranks)");
}

#[test]
fn table_files_are_regular_and_bounded() {
    let dir = std::env::temp_dir().join(format!("pcoll-read-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = dir.join("t.toml");
    std::fs::write(&ok, TABLE_A).unwrap();
    assert_eq!(read_table(&ok).unwrap(), TABLE_A);
    // Through a symbolic link: the file it points to.
    let link = dir.join("link.toml");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&ok, &link).unwrap();
    assert_eq!(read_table(&link).unwrap(), TABLE_A);
    // A directory, a device that never ends, a FIFO (opening it would wait for a writer).
    assert!(read_table(&dir)
        .unwrap_err()
        .to_string()
        .contains("directory"));
    let zero = read_table(Path::new("/dev/zero")).unwrap_err();
    assert!(zero.to_string().contains("not a regular file"), "{zero}");
    let fifo = dir.join("fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        assert!(read_table(&fifo).is_err());
    }
    // Larger than a table may be (a sparse file: no bytes written).
    let big = dir.join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(TABLE_MAX + 1)
        .unwrap();
    assert!(read_table(&big).unwrap_err().to_string().contains("above"));
    std::fs::remove_dir_all(&dir).unwrap();
}
