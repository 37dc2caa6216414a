//! The `PCOLL_` environment variables the library reads, and a warning for one it does not
//! (a misspelt `PCOLL_REDUCE_ALGORITHM=shm` would otherwise be ignored without a word; Intel
//! MPI answers an unknown `I_MPI_` variable the same way). Only a warning: nothing a decision
//! reads comes from here.

/// Every variable the library reads: the user guide's environment table
/// (docs/user-guide.md), and the test hooks `PCOLL_LEARN_SKEW` and `PCOLL_SHM_PATIENCE_US`.
/// `tests/envvars.rs` checks it against the sources and the guide.
pub const LIBRARY: &[&str] = &[
    "PCOLL_TUNING",
    "PCOLL_REDUCE",
    "PCOLL_ALLREDUCE",
    "PCOLL_REDUCE_SCATTER",
    "PCOLL_REDUCE_SCATTER_BLOCK",
    "PCOLL_ALLGATHERV",
    "PCOLL_ALLGATHER",
    "PCOLL_BCAST",
    "PCOLL_SEGMENT",
    "PCOLL_CHUNK",
    "PCOLL_CHUNK_MAX",
    "PCOLL_FALLBACK",
    "PCOLL_LOG",
    "PCOLL_STATS",
    "PCOLL_DISABLE",
    "PCOLL_NODES",
    "PCOLL_MPI",
    "PCOLL_SHM",
    "PCOLL_SHM_BYTES",
    "PCOLL_SHM_SLOTS",
    "PCOLL_SHM_AFTER",
    "PCOLL_SHM_LIMIT",
    "PCOLL_SHM_COMBINE",
    "PCOLL_SHM_REPLICATE",
    "PCOLL_SHM_STREAM",
    "PCOLL_SHM_PATIENCE_US",
    "PCOLL_HIER_SHM",
    "PCOLL_LEARN",
    "PCOLL_LEARN_CALLS",
    "PCOLL_LEARN_MARGIN",
    "PCOLL_LEARN_SKEW",
    "PCOLL_RACE",
    "PCOLL_RACE_AGAIN",
];

/// Variables of pcoll's own scripts, tests and helper libraries, which may be in a program's
/// environment beside the library (not warned about).
const TOOLS: &[&str] = &[
    "PCOLL_SIM",
    "PCOLL_SIM_ALGS",
    "PCOLL_ALGS",
    "PCOLL_TEST_TIMEOUT",
    "PCOLL_FAKE_FAULT",
    "PCOLL_VECTORS",
];

/// Prefixes of tool variables (the emulated cluster's scripts and helper: `PCOLL_NET_*`).
const TOOL_PREFIXES: &[&str] = &["PCOLL_NET_"];

/// One warning per `PCOLL_` name in `names` that neither the library nor pcoll's tools read,
/// with the closest known variable where one is close. Sorted, without duplicates.
pub fn unknown<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut odd: Vec<&str> = names
        .into_iter()
        .filter(|n| n.starts_with("PCOLL_"))
        .filter(|n| !LIBRARY.contains(n) && !TOOLS.contains(n))
        .filter(|n| !TOOL_PREFIXES.iter().any(|p| n.starts_with(p)))
        .collect();
    odd.sort_unstable();
    odd.dedup();
    odd.into_iter()
        .map(|n| {
            let hint = match closest(n) {
                Some(k) => format!("did you mean {k}? "),
                None => String::new(),
            };
            format!(
                "{n} is not a pcoll variable and is ignored; {hint}the variables: man pcoll, or the user guide's Environment section"
            )
        })
        .collect()
}

/// The library variable nearest to `name` by edit distance, if within a third of its length
/// (at least 2), or one whose name is a prefix of `name` (`PCOLL_REDUCE_ALGORITHM`).
fn closest(name: &str) -> Option<&'static str> {
    let (d, k) = LIBRARY
        .iter()
        .map(|k| (distance(name, k), *k))
        .min()
        .expect("LIBRARY is not empty");
    if d <= (name.len() / 3).max(2) {
        return Some(k);
    }
    LIBRARY
        .iter()
        .filter(|k| name.starts_with(&format!("{k}_")))
        .max_by_key(|k| k.len())
        .copied()
}

/// Levenshtein distance of two ASCII names.
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(x != y))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_and_other_prefixes_pass() {
        let names = [
            "PCOLL_TUNING",
            "PCOLL_LEARN_SKEW",
            "PCOLL_NET_PPN",
            "PCOLL_SIM",
            "PATH",
            "OMPI_MCA_btl",
            "PCOLLX",
        ];
        assert!(unknown(names).is_empty());
    }

    #[test]
    fn misspellings_are_named_with_the_nearest() {
        let w = unknown(["PCOLL_TUNNING", "PCOLL_REDUCE_ALGORITHM", "PCOLL_STAT"]);
        assert_eq!(w.len(), 3);
        assert!(w[0].starts_with("PCOLL_REDUCE_ALGORITHM is not a pcoll variable"));
        assert!(w[0].contains("did you mean PCOLL_REDUCE?"), "{}", w[0]);
        assert!(w[1].contains("did you mean PCOLL_STATS?"), "{}", w[1]);
        assert!(w[2].contains("did you mean PCOLL_TUNING?"), "{}", w[2]);
    }

    #[test]
    fn a_name_near_nothing_gets_no_hint_and_duplicates_one_warning() {
        let w = unknown(["PCOLL_ALGORITHM", "PCOLL_ALGORITHM"]);
        assert_eq!(w.len(), 1);
        assert!(!w[0].contains("did you mean"), "{}", w[0]);
        assert!(w[0].contains("man pcoll"));
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("PCOLL_SHM", "PCOLL_SHM"), 0);
        assert_eq!(distance("PCOLL_STAT", "PCOLL_STATS"), 1);
        assert_eq!(distance("PCOLL_TUNNING", "PCOLL_TUNING"), 1);
        assert_eq!(distance("abc", "xbz"), 2);
    }
}
