//! Environment configuration (the per-call decision is [`crate::decide`]).
//!
//! [`Config`] is parsed from an environment *snapshot* (any `name -> value` lookup), so it is
//! testable without touching the process environment. Bad values never panic: each yields
//! one warning naming the variable, the bad value and the accepted values, and the default
//! is used. Empty values count as unset.
//!
//! | variable | accepted | default |
//! |---|---|---|
//! | `PCOLL_TUNING` | path of a `tuning.toml` | the built-in table |
//! | `PCOLL_REDUCE`, `PCOLL_ALLREDUCE`, `PCOLL_REDUCE_SCATTER`, `PCOLL_ALLGATHERV` | an algorithm available for that collective, or `model` | not forced |
//! | `PCOLL_SEGMENT` | segment bytes > 0 (`16384`, `64KiB`, ...) | rule's segment, else the algorithm's choice (a run-time segment, [`Overrides`](crate::decide::Overrides), ranks above) |
//! | `PCOLL_CHUNK` | chunk bytes, `0` = off (`3840`, `7680`, `8KiB`, ...) | the MPI library's default |
//! | `PCOLL_CHUNK_MAX` | largest message split into chunks, bytes | the MPI library's default; 4 chunks for bcast/allgather(v) on one node |
//! | `PCOLL_FALLBACK` | `silent`, `warn`, `error` | `warn` |
//! | `PCOLL_LOG` | a log filter (stored as is) | none |
//! | `PCOLL_STATS` | `0`, `1`, `true`, `false`, `yes`, `no`, `on`, `off` | off |
//! | `PCOLL_DISABLE` | same as `PCOLL_STATS` | off |
//! | `PCOLL_NODES` | `shared`, `hostname`, or K (nodes of K consecutive world ranks) | `shared` |
//! | `PCOLL_LEARN` | path the learned table is written to at `MPI_Finalize` ([`crate::learn`]) | off |
//! | `PCOLL_LEARN_CALLS` | timed calls per candidate, 1..=100 | 5 |
//! | `PCOLL_LEARN_MARGIN` | a fraction, 0 <= margin < 1 | 0.10 |
//! | `PCOLL_RACE` | same as `PCOLL_STATS`: `0` runs a `race = true` rule's algorithm without racing it | on |
//! | `PCOLL_RACE_AGAIN` | calls of a raced cell's winner before it is raced again (doubling while the winner stays), 0: never | 512 |
//! | `PCOLL_MPI` | an MPI name ([`crate::mpi::Mpi`]: `openmpi`, `mpich`, `openmpi5`, `mpich5`, `impi`, `other-openmpi`, `other-mpich`) | what `MPI_Get_library_version` names |

use crate::agree::TableRead;
use crate::algo::{Collective, Pick};
use crate::tuning::size::{parse_size, SIZE_FORMS};
use crate::tuning::{Table, MAX_SEGMENT};
use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;

/// What to do when the chosen algorithm cannot serve a call (`PCOLL_FALLBACK`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FallbackPolicy {
    /// Fall back without a word.
    Silent,
    /// Fall back and warn (the caller logs the reason, ideally once per reason).
    #[default]
    Warn,
    /// Fail the call with an error.
    Error,
}

impl FallbackPolicy {
    pub const ACCEPTED: &'static str = "silent, warn, error";
    pub fn name(self) -> &'static str {
        match self {
            FallbackPolicy::Silent => "silent",
            FallbackPolicy::Warn => "warn",
            FallbackPolicy::Error => "error",
        }
    }
}

impl FromStr for FallbackPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "silent" => Ok(FallbackPolicy::Silent),
            "warn" => Ok(FallbackPolicy::Warn),
            "error" => Ok(FallbackPolicy::Error),
            _ => Err(format!("accepted: {}", FallbackPolicy::ACCEPTED)),
        }
    }
}

/// The environment configuration (read once per process).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// `PCOLL_TUNING`: tuning table file.
    pub tuning: Option<PathBuf>,
    /// `PCOLL_<COLL>`: forced algorithm (or `model`), indexed by [`Collective::index`].
    pub force: [Option<Pick>; Collective::ALL.len()],
    /// `PCOLL_SEGMENT`: segment bytes (> 0), overrides the table.
    pub segment: Option<usize>,
    /// `PCOLL_CHUNK`: messages are sent in chunks of at most this many bytes (0: whole).
    pub chunk: Option<usize>,
    /// `PCOLL_CHUNK_MAX`: messages above this many bytes are sent whole.
    pub chunk_max: Option<usize>,
    /// `PCOLL_FALLBACK`.
    pub fallback: FallbackPolicy,
    /// `PCOLL_LOG`: log filter, stored for the logger.
    pub log: Option<String>,
    /// `PCOLL_STATS`: print a summary at finalize.
    pub stats: bool,
    /// `PCOLL_DISABLE`: pure passthrough to the native collectives.
    pub disable: bool,
    /// `PCOLL_NODES`: how ranks are grouped into nodes for `hier` / `hier_ml`.
    pub nodes: crate::nodes::NodeMode,
    /// `PCOLL_MPI`: treat the running MPI as this one (its table, native model, defaults).
    pub mpi: Option<crate::mpi::Mpi>,
    /// `PCOLL_LEARN`: learn the cells' algorithms while the program runs, and write the
    /// learned table here at `MPI_Finalize` (rank 0 of `MPI_COMM_WORLD`).
    pub learn: Option<PathBuf>,
    /// `PCOLL_LEARN_CALLS`: timed calls per candidate (None: the default).
    pub learn_calls: Option<usize>,
    /// `PCOLL_LEARN_MARGIN` (None: the default).
    pub learn_margin: Option<f64>,
    /// `PCOLL_RACE=0`: a table's `race = true` rules run their algorithm unraced.
    pub race_off: bool,
    /// `PCOLL_RACE_AGAIN`: winner calls before a raced cell is raced again (None: the
    /// default, [`crate::learn::DEFAULT_RACE_AGAIN`]; 0: never).
    pub race_again: Option<u64>,
}

/// The accepted spellings of an on/off variable ([`parse_bool`]).
pub const BOOL_ACCEPTED: &str = "0, 1, true, false, yes, no, on, off";

/// An on/off value (case-insensitive): the one parser of `PCOLL_STATS` and `PCOLL_DISABLE`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "0" | "false" | "no" | "off" => Some(false),
        "1" | "true" | "yes" | "on" => Some(true),
        _ => None,
    }
}

impl Config {
    /// Parses a snapshot given as a lookup function. Returns the config and one warning per
    /// bad value (each naming the variable, the value and the accepted values).
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> (Config, Vec<String>) {
        let mut cfg = Config::default();
        let mut warns = Vec::new();
        // Empty values count as unset (`PCOLL_REDUCE= prog` undoes an export).
        let var = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let mut bad = |name: &str, value: &str, why: &str, accepted: &str, dflt: &str| {
            warns.push(format!(
                "{name}={value:?} ignored: {why}accepted: {accepted}; using {dflt}"
            ));
        };

        cfg.tuning = var("PCOLL_TUNING").map(PathBuf::from);
        for coll in Collective::ALL {
            let name = coll.env_var();
            let Some(v) = var(name) else { continue };
            match force_value(coll, &v) {
                Ok(a) => cfg.force[coll.index()] = Some(a),
                Err(why) => bad(name, &v, &why, &Pick::accepted(coll), "the tuning table"),
            }
        }
        if let Some(v) = var("PCOLL_SEGMENT") {
            let accepted = format!("segment bytes 1..={MAX_SEGMENT}, {SIZE_FORMS}");
            match segment_value(&v) {
                Ok(n) => cfg.segment = Some(n),
                Err(why) => bad("PCOLL_SEGMENT", &v, &why, &accepted, "the table's segment"),
            }
        }
        for (name, slot) in [
            ("PCOLL_CHUNK", &mut cfg.chunk),
            ("PCOLL_CHUNK_MAX", &mut cfg.chunk_max),
        ] {
            if let Some(v) = var(name) {
                let accepted = format!("bytes 0..={MAX_SEGMENT} (0: off), {SIZE_FORMS}");
                match chunk_value(&v) {
                    Ok(n) => *slot = Some(n),
                    Err(why) => bad(name, &v, &why, &accepted, "the default"),
                }
            }
        }
        if let Some(v) = var("PCOLL_FALLBACK") {
            match v.parse::<FallbackPolicy>() {
                Ok(f) => cfg.fallback = f,
                Err(_) => bad("PCOLL_FALLBACK", &v, "", FallbackPolicy::ACCEPTED, "warn"),
            }
        }
        cfg.log = var("PCOLL_LOG");
        for (name, slot) in [
            ("PCOLL_STATS", &mut cfg.stats),
            ("PCOLL_DISABLE", &mut cfg.disable),
        ] {
            if let Some(v) = var(name) {
                match parse_bool(&v) {
                    Some(b) => *slot = b,
                    None => bad(name, &v, "", BOOL_ACCEPTED, "0"),
                }
            }
        }
        if let Some(v) = var("PCOLL_NODES") {
            match crate::nodes::NodeMode::parse(&v) {
                Ok(m) => cfg.nodes = m,
                Err(acc) => bad("PCOLL_NODES", &v, "", &acc, "shared"),
            }
        }
        if let Some(v) = var("PCOLL_MPI") {
            match v.trim().parse::<crate::mpi::Mpi>() {
                Ok(m) => cfg.mpi = Some(m),
                Err(why) => bad(
                    "PCOLL_MPI",
                    &v,
                    &format!("{why}; "),
                    "an MPI name",
                    "the running MPI",
                ),
            }
        }
        cfg.learn = var("PCOLL_LEARN").map(PathBuf::from);
        learn_values(&mut cfg, &var, &mut bad);
        (cfg, warns)
    }

    /// How `PCOLL_LEARN` explores a cell.
    pub fn learn_params(&self) -> crate::learn::Params {
        let d = crate::learn::Params::default();
        crate::learn::Params {
            timed: self.learn_calls.unwrap_or(d.timed),
            margin: self.learn_margin.unwrap_or(d.margin),
            ..d
        }
    }

    /// Winner calls before a raced cell is raced again (0: never).
    pub fn race_again(&self) -> u64 {
        self.race_again.unwrap_or(crate::learn::DEFAULT_RACE_AGAIN)
    }

    /// Parses a snapshot given as a map.
    pub fn from_map(env: &HashMap<String, String>) -> (Config, Vec<String>) {
        Config::from_lookup(&|k| env.get(k).cloned())
    }

    /// Parses the process environment (non-UTF-8 values are read lossily).
    pub fn from_env() -> (Config, Vec<String>) {
        Config::from_lookup(&|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()))
    }

    /// The algorithm (or `model`) forced for `coll` by `PCOLL_<COLL>`.
    pub fn forced(&self, coll: Collective) -> Option<Pick> {
        self.force[coll.index()]
    }

    /// The table to use: `PCOLL_TUNING`'s file if set and valid, else the built-in table
    /// (with a warning saying why).
    pub fn load_table(&self) -> (Table, Vec<String>) {
        self.load_table_or(Table::builtin())
    }

    /// [`Config::load_table`] with another built-in table (the MPI library embeds one tuned
    /// for the MPI it is built against).
    pub fn load_table_or(&self, builtin: Table) -> (Table, Vec<String>) {
        let read = match &self.tuning {
            None => TableRead::Unset,
            Some(path) => match crate::agree::read_table(path) {
                Ok(t) => TableRead::Text(t),
                Err(e) => TableRead::Unreadable(e.to_string()),
            },
        };
        self.table_from(&read, builtin)
    }

    /// The table from the file's bytes as read (`PCOLL_TUNING` names it in warnings): the
    /// file's table if it parses, else `builtin` with a warning saying why.
    pub fn table_from(&self, read: &TableRead, builtin: Table) -> (Table, Vec<String>) {
        let origin = self
            .tuning
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        match read {
            TableRead::Unset => (builtin, Vec::new()),
            TableRead::Unreadable(e) => (
                builtin,
                vec![format!(
                    "PCOLL_TUNING={origin:?}: cannot read the file ({e}); accepted: a readable tuning.toml; using the built-in table"
                )],
            ),
            TableRead::Text(text) => match Table::parse(text, &origin) {
                Ok(t) => (t, Vec::new()),
                Err(e) => (
                    builtin,
                    vec![format!(
                        "PCOLL_TUNING={origin:?}: invalid tuning table; using the built-in table:\n{e}"
                    )],
                ),
            },
        }
    }
}

/// `PCOLL_LEARN_CALLS` and `PCOLL_LEARN_MARGIN` (bad values: `bad`, the default).
fn learn_values(
    cfg: &mut Config,
    var: &dyn Fn(&str) -> Option<String>,
    bad: &mut dyn FnMut(&str, &str, &str, &str, &str),
) {
    use crate::learn::{DEFAULT_MARGIN, DEFAULT_TIMED, MAX_TIMED};
    if let Some(v) = var("PCOLL_RACE") {
        match parse_bool(&v) {
            Some(b) => cfg.race_off = !b,
            None => bad("PCOLL_RACE", &v, "", BOOL_ACCEPTED, "1"),
        }
    }
    if let Some(v) = var("PCOLL_RACE_AGAIN") {
        match v.trim().parse::<u64>() {
            Ok(n) => cfg.race_again = Some(n),
            _ => bad(
                "PCOLL_RACE_AGAIN",
                &v,
                "",
                "a number of calls (0: never)",
                &crate::learn::DEFAULT_RACE_AGAIN.to_string(),
            ),
        }
    }
    if let Some(v) = var("PCOLL_LEARN_CALLS") {
        match v.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_TIMED).contains(&n) => cfg.learn_calls = Some(n),
            _ => bad(
                "PCOLL_LEARN_CALLS",
                &v,
                "",
                &format!("an integer 1..={MAX_TIMED}"),
                &DEFAULT_TIMED.to_string(),
            ),
        }
    }
    if let Some(v) = var("PCOLL_LEARN_MARGIN") {
        match v.trim().parse::<f64>() {
            Ok(g) if g.is_finite() && (0.0..1.0).contains(&g) => cfg.learn_margin = Some(g),
            _ => bad(
                "PCOLL_LEARN_MARGIN",
                &v,
                "",
                "a fraction, 0 <= margin < 1",
                &DEFAULT_MARGIN.to_string(),
            ),
        }
    }
}

/// `PCOLL_<COLL>`: an algorithm available for `coll`, or `model` (Err: why not, for the
/// warning).
fn force_value(coll: Collective, v: &str) -> Result<Pick, String> {
    match v.parse::<Pick>() {
        Ok(a) if a.available(coll) => Ok(a),
        Ok(a) => Err(format!("{a} is not available for {coll}; ")),
        Err(_) => Err("unknown algorithm; ".into()),
    }
}

/// `PCOLL_SEGMENT`: bytes in 1..=MAX_SEGMENT (Err: why not, for the warning).
fn segment_value(v: &str) -> Result<usize, String> {
    match parse_size(v) {
        Ok(0) => Err("must be > 0; ".into()),
        Ok(n) if n > MAX_SEGMENT => Err("too large; ".into()),
        Ok(n) => Ok(n),
        Err(why) => Err(format!("{why}; ")),
    }
}

/// `PCOLL_CHUNK`, `PCOLL_CHUNK_MAX`: bytes in 0..=MAX_SEGMENT (Err: why not).
fn chunk_value(v: &str) -> Result<usize, String> {
    match parse_size(v) {
        Ok(n) if n > MAX_SEGMENT => Err("too large; ".into()),
        Ok(n) => Ok(n),
        Err(why) => Err(format!("{why}; ")),
    }
}
