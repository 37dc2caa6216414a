//! Environment configuration and the per-call algorithm decision.
//!
//! [`Config`] is parsed from an environment *snapshot* (any `name -> value` lookup), so it is
//! testable without touching the process environment. Bad values never panic: each yields
//! one warning naming the variable, the bad value and the accepted values, and the default
//! is used. Empty values count as unset.
//!
//! | variable | accepted | default |
//! |---|---|---|
//! | `PCOLL_TUNING` | path of a `tuning.toml` | the built-in table |
//! | `PCOLL_REDUCE`, `PCOLL_ALLREDUCE`, `PCOLL_REDUCE_SCATTER`, `PCOLL_ALLGATHERV` | an algorithm available for that collective | not forced |
//! | `PCOLL_SEGMENT` | segment bytes > 0 (`16384`, `64KiB`, ...) | rule's segment, else the algorithm's choice (a run-time segment, [`Overrides`], ranks above) |
//! | `PCOLL_CHUNK` | chunk bytes, `0` = off (`3840`, `7680`, `8KiB`, ...) | the MPI library's default |
//! | `PCOLL_CHUNK_MAX` | largest message split into chunks, bytes | the MPI library's default |
//! | `PCOLL_FALLBACK` | `silent`, `warn`, `error` | `warn` |
//! | `PCOLL_LOG` | a log filter (stored as is) | none |
//! | `PCOLL_STATS` | `0`, `1`, `true`, `false` | off |
//! | `PCOLL_DISABLE` | `0`, `1`, `true`, `false` | off |
//!
//! [`choose`] is the pure decision of one call: `PCOLL_DISABLE` > forced by env > tuning
//! table > built-in default (`binomial`), then the chosen algorithm's preconditions
//! ([`Algorithm::check`]); if they fail, the fallback policy decides.

use crate::algo::{Algorithm, CallSpec, Collective};
use crate::error::Error;
use crate::tuning::size::{parse_size, SIZE_FORMS};
use crate::tuning::{names, Table, MAX_SEGMENT};
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Built-in default algorithm for cells without a rule: order-preserving, available for
/// every collective, `ceil(log2 p)` rounds.
pub const DEFAULT_ALGORITHM: Algorithm = Algorithm::Binomial;

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
    /// `PCOLL_<COLL>`: forced algorithm, indexed by [`Collective::index`].
    pub force: [Option<Algorithm>; 4],
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
}

const BOOL_ACCEPTED: &str = "0, 1, true, false";

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "0" | "false" => Some(false),
        "1" | "true" => Some(true),
        _ => None,
    }
}

impl Config {
    /// Every variable `Config` reads.
    pub const VARS: [&'static str; 12] = [
        "PCOLL_TUNING",
        "PCOLL_REDUCE",
        "PCOLL_ALLREDUCE",
        "PCOLL_REDUCE_SCATTER",
        "PCOLL_ALLGATHERV",
        "PCOLL_SEGMENT",
        "PCOLL_CHUNK",
        "PCOLL_CHUNK_MAX",
        "PCOLL_FALLBACK",
        "PCOLL_LOG",
        "PCOLL_STATS",
        "PCOLL_DISABLE",
    ];

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
            let avail = Algorithm::available(coll);
            match v.parse::<Algorithm>() {
                Ok(a) if avail.contains(&a) => cfg.force[coll.index()] = Some(a),
                Ok(a) => bad(
                    name,
                    &v,
                    &format!("{a} is not available for {coll}; "),
                    &names(avail),
                    "the tuning table",
                ),
                Err(_) => bad(
                    name,
                    &v,
                    "unknown algorithm; ",
                    &names(avail),
                    "the tuning table",
                ),
            }
        }
        if let Some(v) = var("PCOLL_SEGMENT") {
            let accepted = format!("segment bytes 1..={MAX_SEGMENT}, {SIZE_FORMS}");
            match parse_size(&v) {
                Ok(0) => bad(
                    "PCOLL_SEGMENT",
                    &v,
                    "must be > 0; ",
                    &accepted,
                    "the table's segment",
                ),
                Ok(n) if n > MAX_SEGMENT => bad(
                    "PCOLL_SEGMENT",
                    &v,
                    "too large; ",
                    &accepted,
                    "the table's segment",
                ),
                Ok(n) => cfg.segment = Some(n),
                Err(why) => bad(
                    "PCOLL_SEGMENT",
                    &v,
                    &format!("{why}; "),
                    &accepted,
                    "the table's segment",
                ),
            }
        }
        for (name, slot) in [
            ("PCOLL_CHUNK", &mut cfg.chunk),
            ("PCOLL_CHUNK_MAX", &mut cfg.chunk_max),
        ] {
            if let Some(v) = var(name) {
                let accepted = format!("bytes 0..={MAX_SEGMENT} (0: off), {SIZE_FORMS}");
                match parse_size(&v) {
                    Ok(n) if n > MAX_SEGMENT => {
                        bad(name, &v, "too large; ", &accepted, "the default")
                    }
                    Ok(n) => *slot = Some(n),
                    Err(why) => bad(name, &v, &format!("{why}; "), &accepted, "the default"),
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
        (cfg, warns)
    }

    /// Parses a snapshot given as a map.
    pub fn from_map(env: &HashMap<String, String>) -> (Config, Vec<String>) {
        Config::from_lookup(&|k| env.get(k).cloned())
    }

    /// Parses the process environment (non-UTF-8 values are read lossily).
    pub fn from_env() -> (Config, Vec<String>) {
        Config::from_lookup(&|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()))
    }

    /// The algorithm forced for `coll` by `PCOLL_<COLL>`.
    pub fn forced(&self, coll: Collective) -> Option<Algorithm> {
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
        let Some(path) = &self.tuning else {
            return (builtin, Vec::new());
        };
        let origin = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                return (
                    builtin,
                    vec![format!(
                        "PCOLL_TUNING={origin:?}: cannot read the file ({e}); accepted: a readable tuning.toml; using the built-in table"
                    )],
                )
            }
        };
        match Table::parse(&text, &origin) {
            Ok(t) => (t, Vec::new()),
            Err(e) => (
                builtin,
                vec![format!(
                    "PCOLL_TUNING={origin:?}: invalid tuning table; using the built-in table:\n{e}"
                )],
            ),
        }
    }
}

/// Where an algorithm choice came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `PCOLL_DISABLE=1`: native, no checks.
    Disabled,
    /// `PCOLL_<COLL>`.
    Forced,
    /// A table rule: index among the collective's rules and line in its file (0 if none).
    Table { rule: usize, line: usize },
    /// [`DEFAULT_ALGORITHM`] (no rule matched, or fallback).
    Default,
}

impl Source {
    /// Human description for messages.
    pub fn describe(&self, coll: Collective, table: &Table) -> String {
        match *self {
            Source::Disabled => "PCOLL_DISABLE".into(),
            Source::Forced => coll.env_var().into(),
            Source::Table { rule, line } => {
                let c = crate::tuning::Choice {
                    algorithm: Algorithm::Native,
                    segment: None,
                    rule,
                    origin_line: line,
                };
                table.describe(coll, &c)
            }
            Source::Default => "the built-in default".into(),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Disabled => f.write_str("disabled"),
            Source::Forced => f.write_str("forced"),
            Source::Table { rule, .. } => write!(f, "table rule {}", rule + 1),
            Source::Default => f.write_str("default"),
        }
    }
}

/// The outcome of [`choose`] for one call.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The algorithm to run (its preconditions hold for the call).
    pub algorithm: Algorithm,
    /// Where it came from.
    pub source: Source,
    /// Segment bytes: run-time (`pcoll_segment`) > `PCOLL_SEGMENT` > the rule's segment (if
    /// the rule's algorithm runs) > 0 (= the algorithm chooses from the cost model).
    pub segment: usize,
    /// The first choice that was rejected, if a fallback happened.
    pub rejected: Option<(Algorithm, Source)>,
    /// Whether the caller should log `reason` as a warning (policy `warn` and a fallback).
    pub warn: bool,
    /// Why a fallback happened (None without a fallback).
    pub reason: Option<String>,
}

impl Decision {
    /// `segment` in elements of `elem_bytes` bytes for [`CallSpec::seg_elems`] (0 stays 0;
    /// otherwise at least 1 element).
    pub fn seg_elems(&self, elem_bytes: usize) -> usize {
        if self.segment == 0 {
            0
        } else {
            (self.segment / elem_bytes.max(1)).max(1)
        }
    }
}

/// Decides the algorithm of one call: `PCOLL_DISABLE` > `PCOLL_<COLL>` > the first table
/// rule for `(spec.p, spec.bytes())` > [`DEFAULT_ALGORITHM`]. If the candidate fails
/// [`Algorithm::check`], the next candidate in that order that passes is used (the table's
/// choice, then `binomial`, then `native`, all order-preserving) and the policy decides:
/// `silent` → no warning, `warn` → `warn = true` with the reason, `error` →
/// `Err(Error::Unsupported(reason))`.
///
/// Pure and allocation-free on the normal path (messages are only built on fallback).
pub fn choose(cfg: &Config, table: &Table, spec: &CallSpec) -> Result<Decision, Error> {
    choose_forced(cfg, table, spec, None)
}

/// [`choose`] with a run-time override (the C API's `pcoll_force`), which ranks above the
/// environment.
pub fn choose_forced(
    cfg: &Config,
    table: &Table,
    spec: &CallSpec,
    runtime: Option<Algorithm>,
) -> Result<Decision, Error> {
    choose_with(
        cfg,
        table,
        spec,
        Overrides {
            algorithm: runtime,
            segment: None,
        },
    )
}

/// Run-time overrides of one process (the C API's `pcoll_force` and `pcoll_segment`); each
/// ranks above its environment variable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Algorithm for the call's collective (above `PCOLL_<COLL>`).
    pub algorithm: Option<Algorithm>,
    /// Segment bytes (> 0; above `PCOLL_SEGMENT`).
    pub segment: Option<usize>,
}

/// [`choose`] with run-time overrides. Segment precedence: run-time > `PCOLL_SEGMENT` > the
/// rule's `segment` (only when the rule's algorithm runs) > 0 (the cost model's choice).
pub fn choose_with(
    cfg: &Config,
    table: &Table,
    spec: &CallSpec,
    over: Overrides,
) -> Result<Decision, Error> {
    let coll = spec.coll;
    let runtime = over.algorithm;
    let seg_over = over.segment.filter(|&b| b > 0).or(cfg.segment);
    if cfg.disable {
        return Ok(Decision {
            algorithm: Algorithm::Native,
            source: Source::Disabled,
            segment: seg_over.unwrap_or(0),
            rejected: None,
            warn: false,
            reason: None,
        });
    }
    let rule = table.lookup(coll, spec.p, spec.bytes());
    // Candidates in priority order, each with the segment it brings.
    let forced = runtime
        .or(cfg.forced(coll))
        .map(|a| (a, Source::Forced, None));
    let from_table = rule.map(|c| {
        (
            c.algorithm,
            Source::Table {
                rule: c.rule,
                line: c.origin_line,
            },
            c.segment,
        )
    });
    let candidates = [
        forced,
        from_table,
        Some((DEFAULT_ALGORITHM, Source::Default, None)),
        Some((Algorithm::Native, Source::Default, None)),
    ];
    let mut first_fail: Option<(Algorithm, Source, String)> = None;
    for (alg, source, seg) in candidates.into_iter().flatten() {
        match alg.check(spec) {
            Ok(()) => {
                let segment = seg_over.or(seg).unwrap_or(0);
                let Some((bad, bad_src, why)) = first_fail else {
                    return Ok(Decision {
                        algorithm: alg,
                        source,
                        segment,
                        rejected: None,
                        warn: false,
                        reason: None,
                    });
                };
                let reason = format!(
                    "{coll} p={} bytes={}: {bad} (from {}) cannot serve this call: {why}; using {alg} (from {})",
                    spec.p,
                    spec.bytes(),
                    bad_src.describe(coll, table),
                    source.describe(coll, table)
                );
                return match cfg.fallback {
                    FallbackPolicy::Error => Err(Error::Unsupported(format!(
                        "{coll} p={} bytes={}: {bad} (from {}) cannot serve this call: {why} (PCOLL_FALLBACK=error)",
                        spec.p,
                        spec.bytes(),
                        bad_src.describe(coll, table)
                    ))),
                    policy => Ok(Decision {
                        algorithm: alg,
                        source,
                        segment,
                        rejected: Some((bad, bad_src)),
                        warn: policy == FallbackPolicy::Warn,
                        reason: Some(reason),
                    }),
                };
            }
            Err(why) => {
                if first_fail.is_none() {
                    first_fail = Some((alg, source, why));
                }
            }
        }
    }
    // Native passes every check; reaching here is a bug.
    Err(Error::Internal(format!(
        "no algorithm can serve {coll} p={}",
        spec.p
    )))
}
