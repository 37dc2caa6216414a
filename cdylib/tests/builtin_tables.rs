//! The embedded tables of the five measured MPIs (`tuning.toml`, `tuning.mpich.toml`,
//! `tables/tuning.{openmpi5,mpich5,impi}.toml`) parse, and every collective has a rule for
//! every size at p = 2..=64 (so no cell silently falls to the generic default); the table
//! of an unmeasured MPI (`tables/tuning.other.toml`) has no rule and a wide margin.

use pcoll::tuning::Table;
use pcoll::Collective;

fn load(name: &str) -> Table {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    Table::parse(&text, name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn embedded_tables_parse_and_cover_every_cell() {
    for name in [
        "tuning.toml",
        "tuning.mpich.toml",
        "tables/tuning.openmpi5.toml",
        "tables/tuning.mpich5.toml",
        "tables/tuning.impi.toml",
    ] {
        let t = load(name);
        for coll in Collective::ALL {
            for p in 2..=64 {
                for bytes in (0..30).map(|e| 1usize << e) {
                    assert!(
                        t.lookup(coll, p, bytes).is_some(),
                        "{name}: no rule for {coll} p={p} bytes={bytes}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_unmeasured_mpis_table_has_no_rules_and_a_wide_margin() {
    let t = load("tables/tuning.other.toml");
    for coll in Collective::ALL {
        assert!(t.lookup(coll, 2, 1 << 20).is_none(), "{coll}");
    }
    assert!(t.margin() >= 0.25, "margin {}", t.margin());
}

/// The non-blocking rules (`form = "nonblocking"`) steer only those forms: MPICH 5's
/// `MPI_Ireduce` of 8 KiB at p = 2 takes `shm` where `MPI_Reduce` stays native.
#[test]
fn nonblocking_rules_apply_to_the_nonblocking_forms_only() {
    let t = load("tables/tuning.mpich5.toml");
    let alg = |nb| {
        t.lookup_call(Collective::Reduce, 2, 8 << 10, true, 0, nb)
            .unwrap()
            .algorithm
    };
    assert_eq!(alg(true), pcoll::Algorithm::Shm.into());
    assert_eq!(alg(false), pcoll::Algorithm::Native.into());
}
