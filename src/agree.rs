//! One decision on every rank: the inputs that steer pcoll's decisions (the tuning table's
//! bytes, the `PCOLL_*` variables that pick algorithms, segments and chunks, the MPI library)
//! compared across ranks, and the same way out on every rank when they differ.
//!
//! The MPI side (`cdylib/src/agree.rs`, at `MPI_Init`) reads this rank's [`Inputs`], gathers
//! every rank's [`Inputs::digest`] (one `u64` per component), and calls [`compare`]: every
//! rank sees the same digests, so every rank computes the same [`Difference`]s. When there is
//! one, rank 0's inputs are broadcast ([`Inputs::encode`] / [`Inputs::decode`]) and every
//! rank decides from them; rank 0 prints [`warning`]. No I/O here.

use crate::algo::Collective;
use std::path::Path;

/// The `PCOLL_*` variables that steer a decision (what a rank sends, how it splits messages,
/// whether pcoll serves at all), besides `PCOLL_TUNING` (the table, compared by its bytes).
/// `PCOLL_LOG` and `PCOLL_STATS` are not among them: they only close the native gate, whose
/// decisions equal the Rust path's.
pub fn steering_vars() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Collective::ALL.iter().map(|c| c.env_var()).collect();
    v.extend([
        "PCOLL_SEGMENT",
        "PCOLL_CHUNK",
        "PCOLL_CHUNK_MAX",
        "PCOLL_FALLBACK",
        "PCOLL_NODES",
        "PCOLL_DISABLE",
        "PCOLL_MPI",
        // The shared-memory level: whether it runs, its cells, who combines, when the window
        // is made.
        "PCOLL_SHM",
        "PCOLL_SHM_AFTER",
        "PCOLL_SHM_BYTES",
        "PCOLL_SHM_LIMIT",
        "PCOLL_SHM_COMBINE",
        "PCOLL_SHM_REPLICATE",
        "PCOLL_SHM_SLOTS",
        "PCOLL_HIER_SHM",
        // Learning changes decisions, so whether it is on (and how it explores) is agreed;
        // the path matters only on rank 0, which writes the table.
        "PCOLL_LEARN",
        "PCOLL_LEARN_CALLS",
        "PCOLL_LEARN_MARGIN",
        "PCOLL_RACE",
        "PCOLL_RACE_AGAIN",
    ]);
    v
}

/// The table file as this rank read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableRead {
    /// `PCOLL_TUNING` unset: the built-in table.
    Unset,
    /// Set but not readable (the reason): the built-in table, with a warning.
    Unreadable(String),
    /// The file's text (parsed later, from these very bytes).
    Text(String),
}

/// One rank's decision inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inputs {
    /// `PCOLL_TUNING` as given (the path), `None` when unset.
    pub tuning: Option<String>,
    pub table: TableRead,
    /// The [`steering_vars`], in that order (`None`: unset or empty).
    pub vars: Vec<Option<String>>,
    /// `MPI_Get_library_version`.
    pub mpi: String,
}

/// Component names, in [`Inputs::digest`] order.
pub fn components() -> Vec<&'static str> {
    let mut v = vec!["PCOLL_TUNING"];
    v.extend(steering_vars());
    v.push("the MPI library");
    v
}

/// Digest of an unset component.
pub const UNSET: u64 = 0;
/// Digest of a table that is set but unreadable.
pub const UNREADABLE: u64 = 1;

/// FNV-1a 64; a set value's digest has its two low bits `10`, apart from [`UNSET`] and
/// [`UNREADABLE`].
pub fn digest_of(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h & !3) | 2
}

impl Inputs {
    /// This rank's inputs from an environment lookup and a file reader (`None` and empty
    /// values count as unset, as in [`crate::config::Config`]).
    pub fn read(
        get: &dyn Fn(&str) -> Option<String>,
        read_file: &dyn Fn(&Path) -> std::io::Result<String>,
        mpi: &str,
    ) -> Inputs {
        let var = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let tuning = var("PCOLL_TUNING");
        let table = match &tuning {
            None => TableRead::Unset,
            Some(p) => match read_file(Path::new(p)) {
                Ok(t) => TableRead::Text(t),
                Err(e) => TableRead::Unreadable(e.to_string()),
            },
        };
        Inputs {
            tuning,
            table,
            vars: steering_vars().iter().map(|n| var(n)).collect(),
            mpi: mpi.to_string(),
        }
    }

    /// One `u64` per [`components`] entry; equal digests mean equal inputs (the table by its
    /// bytes, not its path).
    pub fn digest(&self) -> Vec<u64> {
        let mut d = vec![match &self.table {
            TableRead::Unset => UNSET,
            TableRead::Unreadable(_) => UNREADABLE,
            TableRead::Text(t) => digest_of(t.as_bytes()),
        }];
        d.extend(self.vars.iter().map(|v| match v {
            None => UNSET,
            Some(s) => digest_of(s.as_bytes()),
        }));
        d.push(digest_of(self.mpi.as_bytes()));
        d
    }

    /// The value of `name` as these inputs give it: a steering variable from [`Inputs::vars`],
    /// `PCOLL_TUNING` from [`Inputs::tuning`]; `None` for any other name.
    pub fn var(&self, name: &str) -> Option<Option<String>> {
        if name == "PCOLL_TUNING" {
            return Some(self.tuning.clone());
        }
        let i = steering_vars().iter().position(|n| *n == name)?;
        Some(self.vars.get(i).cloned().flatten())
    }

    /// These inputs with every steering setting dropped but `PCOLL_DISABLE` (what a rank
    /// decides from when the inputs could not be compared), and the names dropped.
    pub fn without_settings(&self) -> (Inputs, Vec<&'static str>) {
        let mut dropped = Vec::new();
        if self.tuning.is_some() {
            dropped.push("PCOLL_TUNING");
        }
        let vars = steering_vars()
            .iter()
            .zip(&self.vars)
            .map(|(n, v)| {
                if *n == "PCOLL_DISABLE" || v.is_none() {
                    v.clone()
                } else {
                    dropped.push(*n);
                    None
                }
            })
            .collect();
        let out = Inputs {
            tuning: None,
            table: TableRead::Unset,
            vars,
            mpi: self.mpi.clone(),
        };
        (out, dropped)
    }

    /// Bytes for a broadcast: each field as a tag byte, a little-endian `u32` length, bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut put = |tag: u8, s: Option<&str>| {
            out.push(if s.is_some() { tag } else { 0 });
            let b = s.unwrap_or("").as_bytes();
            out.extend((b.len() as u32).to_le_bytes());
            out.extend(b);
        };
        put(1, self.tuning.as_deref());
        match &self.table {
            TableRead::Unset => put(1, None),
            TableRead::Unreadable(e) => put(2, Some(e)),
            TableRead::Text(t) => put(3, Some(t)),
        }
        for v in &self.vars {
            put(1, v.as_deref());
        }
        put(1, Some(&self.mpi));
        out
    }

    /// The inverse of [`Inputs::encode`] (`None` for bytes it did not make).
    pub fn decode(bytes: &[u8]) -> Option<Inputs> {
        let mut at = 0usize;
        let mut take = || -> Option<(u8, String)> {
            let tag = *bytes.get(at)?;
            let len = u32::from_le_bytes(bytes.get(at + 1..at + 5)?.try_into().ok()?) as usize;
            let s = bytes.get(at + 5..at + 5 + len)?;
            at += 5 + len;
            Some((tag, String::from_utf8(s.to_vec()).ok()?))
        };
        let opt = |(tag, s): (u8, String)| (tag != 0).then_some(s);
        let tuning = opt(take()?);
        let table = match take()? {
            (0, _) => TableRead::Unset,
            (2, e) => TableRead::Unreadable(e),
            (3, t) => TableRead::Text(t),
            _ => return None,
        };
        let mut vars = Vec::new();
        for _ in steering_vars() {
            vars.push(opt(take()?));
        }
        let mpi = opt(take()?)?;
        let inputs = Inputs {
            tuning,
            table,
            vars,
            mpi,
        };
        // Nothing may follow: the same fields, re-encoded, are exactly these bytes.
        (inputs.encode().len() == bytes.len()).then_some(inputs)
    }
}

/// A component whose digest is not the same on every rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Its name ([`components`]).
    pub component: &'static str,
    /// The ranks of each distinct digest, rank 0's group first, then by lowest rank.
    pub groups: Vec<(u64, Vec<usize>)>,
}

/// The components that differ, from every rank's digest laid out rank after rank (`all` is
/// `p × components().len()` long, as an allgather leaves it). The same on every rank that
/// holds the same `all`.
pub fn compare(all: &[u64]) -> Vec<Difference> {
    let names = components();
    let n = names.len();
    let p = all.len() / n;
    let mut out = Vec::new();
    for (c, name) in names.iter().enumerate() {
        let mut groups: Vec<(u64, Vec<usize>)> = Vec::new();
        for r in 0..p {
            let d = all[r * n + c];
            match groups.iter_mut().find(|g| g.0 == d) {
                Some(g) => g.1.push(r),
                None => groups.push((d, vec![r])),
            }
        }
        if groups.len() > 1 {
            out.push(Difference {
                component: name,
                groups,
            });
        }
    }
    out
}

/// `0`, `1-3`, `0,2,5-9`: at most 8 runs, then `... (N ranks)`.
pub fn rank_list(ranks: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &r in ranks {
        match runs.last_mut() {
            Some(last) if last.1 + 1 == r => last.1 = r,
            _ => runs.push((r, r)),
        }
    }
    let shown: Vec<String> = runs
        .iter()
        .take(8)
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    let more = if runs.len() > 8 {
        format!(",... ({} ranks)", ranks.len())
    } else {
        String::new()
    };
    let word = if ranks.len() == 1 { "rank" } else { "ranks" };
    format!("{word} {}{more}", shown.join(","))
}

/// What rank 0 has for component `c`, in words.
fn rank0_value(r0: &Inputs, c: &str) -> String {
    let quoted = |v: &Option<String>| v.as_ref().map_or("unset".into(), |s| format!("{s:?}"));
    match c {
        "PCOLL_TUNING" => match &r0.table {
            TableRead::Unset => "unset".into(),
            TableRead::Unreadable(e) => {
                format!("{:?} unreadable ({e})", r0.tuning.as_deref().unwrap_or(""))
            }
            TableRead::Text(t) => format!(
                "{:?} ({} bytes)",
                r0.tuning.as_deref().unwrap_or(""),
                t.len()
            ),
        },
        "the MPI library" => format!("{:?}", r0.mpi.lines().next().unwrap_or("").trim()),
        v => quoted(&r0.var(v).flatten()),
    }
}

/// What another group has, in words (only its digest is known to rank 0).
fn other_value(c: &str, digest: u64, nth: usize) -> String {
    let what = match c {
        "PCOLL_TUNING" => "table",
        "the MPI library" => "library",
        _ => "value",
    };
    match digest {
        UNSET => "unset".into(),
        UNREADABLE => "unreadable".into(),
        _ if nth == 1 => format!("another {what}"),
        _ => format!("another {what} (#{nth})"),
    }
}

/// Rank 0's one warning: what differs, on which ranks, and that rank 0's inputs are used.
/// `diffs` must not be empty.
pub fn warning(diffs: &[Difference], rank0: &Inputs) -> String {
    let parts: Vec<String> = diffs
        .iter()
        .map(|d| {
            let mut nth = 0;
            let groups: Vec<String> = d
                .groups
                .iter()
                .enumerate()
                .map(|(i, (dg, ranks))| {
                    let v = if i == 0 {
                        rank0_value(rank0, d.component)
                    } else {
                        if *dg != UNSET && *dg != UNREADABLE {
                            nth += 1;
                        }
                        other_value(d.component, *dg, nth)
                    };
                    format!("{}: {v}", rank_list(ranks))
                })
                .collect();
            format!("{} ({})", d.component, groups.join("; "))
        })
        .collect();
    format!(
        "settings differ across ranks: {}; every rank uses rank 0's settings",
        parts.join(", ")
    )
}

/// Largest `PCOLL_TUNING` file read (a table is a few KiB; learned ones tens).
const TABLE_MAX: u64 = 16 << 20;

/// The text of the table file at `p`: a regular file (through symbolic links) of at most
/// [`TABLE_MAX`] bytes. Anything else is unreadable (an error the settings report): opening
/// a FIFO would wait for a writer, and `/dev/zero` never ends.
pub fn read_table(p: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let m = std::fs::metadata(p)?;
    if !m.is_file() {
        return Err(std::io::Error::other(if m.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        }));
    }
    if m.len() > TABLE_MAX {
        return Err(std::io::Error::other(format!(
            "{} bytes, above the {} a table may have",
            m.len(),
            TABLE_MAX
        )));
    }
    let mut text = String::new();
    std::fs::File::open(p)?
        .take(TABLE_MAX)
        .read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
#[path = "agree_tests.rs"]
mod tests;
