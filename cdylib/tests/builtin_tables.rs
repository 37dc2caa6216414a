//! Both embedded tables (Open MPI: `tuning.toml`, MPICH: `tuning.mpich.toml`) parse, and
//! every collective has a rule for every size at p = 2..=64 (so no cell silently falls to
//! the generic default).

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
    for name in ["tuning.toml", "tuning.mpich.toml"] {
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
