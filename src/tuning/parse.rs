//! `tuning.toml` text -> [`Table`], with `origin:line:col` on every error.
//!
//! Two stages: serde (with `deny_unknown_fields` and [`toml::Spanned`] values) catches syntax
//! errors, unknown keys/sections and wrong types; then each value is converted and checked
//! here with its span, and the shared semantic checks of `super` run per rule.

use super::size::{parse_size, SIZE_FORMS};
use super::{
    check_margin, check_model, check_rule, shadowed, Bounds, Rule, Table, INF, MAX_BYTES, MAX_P,
    MAX_SEGMENT,
};
use crate::algo::{Collective, CostParams, Pick};
use serde::Deserialize;
use toml::{Spanned, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    model: Option<Spanned<RawModel>>,
    #[serde(default)]
    reduce: Vec<Spanned<RawRule>>,
    #[serde(default)]
    allreduce: Vec<Spanned<RawRule>>,
    #[serde(default)]
    reduce_scatter: Vec<Spanned<RawRule>>,
    #[serde(default)]
    allgatherv: Vec<Spanned<RawRule>>,
    #[serde(default)]
    bcast: Vec<Spanned<RawRule>>,
    #[serde(default)]
    allgather: Vec<Spanned<RawRule>>,
    #[serde(default)]
    reduce_scatter_block: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    alpha: Option<Spanned<f64>>,
    beta: Option<Spanned<f64>>,
    gamma: Option<Spanned<f64>>,
    margin: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    p: Option<Spanned<Value>>,
    bytes: Option<Spanned<Value>>,
    algorithm: Option<Spanned<String>>,
    segment: Option<Spanned<Value>>,
}

/// Maps byte offsets to `origin:line:col`.
struct Src<'a> {
    text: &'a str,
    origin: &'a str,
}

impl Src<'_> {
    /// 1-based line and column (in characters) of byte offset `off`.
    fn line_col(&self, off: usize) -> (usize, usize) {
        let off = off.min(self.text.len());
        let before = &self.text.as_bytes()[..off];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let col = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
        (line, col)
    }
    fn line(&self, off: usize) -> usize {
        self.line_col(off).0
    }
    fn at(&self, off: usize) -> String {
        let (l, c) = self.line_col(off);
        format!("{}:{l}:{c}", self.origin)
    }
    /// The text of the line holding `off`, for context under an error.
    fn snippet(&self, off: usize) -> String {
        let l = self.line(off);
        let text = self.text.lines().nth(l - 1).unwrap_or("");
        format!("\n    {l} | {}", text.trim_end())
    }
}

pub(super) fn parse(text: &str, origin: &str) -> Result<Table, String> {
    let src = Src { text, origin };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let mut msg = e.message().trim_end().to_string();
        if msg.contains("expected a sequence") {
            msg.push_str(
                " (rules are arrays of tables: write [[reduce]], not [reduce])",
            );
        }
        if msg.starts_with("unknown field") && !msg.contains("`algorithm`") && !msg.contains("`alpha`") {
            msg.push_str(" (sections: [model], [[reduce]], [[allreduce]], [[reduce_scatter]], [[allgatherv]], [[bcast]], [[allgather]], [[reduce_scatter_block]])");
        }
        match e.span() {
            Some(sp) => format!("{}: {msg}{}", src.at(sp.start), src.snippet(sp.start)),
            None => format!("{origin}: {msg}"),
        }
    })?;

    let mut errs: Vec<String> = Vec::new();
    let mut err =
        |off: usize, msg: String| errs.push(format!("{}: {msg}{}", src.at(off), src.snippet(off)));

    let mut margin = None;
    let model = raw.model.map(|m| {
        let m = m.into_inner();
        if let Some(g) = &m.margin {
            match check_margin(*g.get_ref()) {
                Some(msg) => err(g.span().start, format!("[model] margin: {msg}")),
                None => margin = Some(*g.get_ref()),
            }
        }
        let d = CostParams::default();
        let get = |v: &Option<Spanned<f64>>, dflt: f64| v.as_ref().map_or(dflt, |s| *s.get_ref());
        let cp = CostParams {
            alpha: get(&m.alpha, d.alpha),
            beta: get(&m.beta, d.beta),
            gamma: get(&m.gamma, d.gamma),
        };
        for (key, msg) in check_model(&cp) {
            let sp = match key {
                "alpha" => &m.alpha,
                "beta" => &m.beta,
                _ => &m.gamma,
            };
            let off = sp.as_ref().map_or(0, |s| s.span().start);
            err(off, format!("[model] {key}: {msg}"));
        }
        cp
    });

    let mut rules: [Vec<Rule>; Collective::ALL.len()] = Default::default();
    let sections = [
        (Collective::Reduce, raw.reduce),
        (Collective::Allreduce, raw.allreduce),
        (Collective::ReduceScatter, raw.reduce_scatter),
        (Collective::Allgatherv, raw.allgatherv),
        (Collective::Bcast, raw.bcast),
        (Collective::Allgather, raw.allgather),
        (Collective::ReduceScatterBlock, raw.reduce_scatter_block),
    ];
    for (coll, raws) in sections {
        for (idx, sr) in raws.into_iter().enumerate() {
            let head = sr.span().start;
            let rr = sr.into_inner();
            let what = |key: &str| format!("[[{coll}]] rule {}: {key}", idx + 1);
            let mut ok = true;
            let mut range = |v: &Option<Spanned<Value>>, key: &str, max: usize| match v {
                None => Bounds::ANY,
                Some(s) => match to_bounds(s.get_ref(), max, key == "bytes") {
                    Ok(b) => b,
                    Err(m) => {
                        err(s.span().start, format!("{}: {m}", what(key)));
                        ok = false;
                        Bounds::ANY
                    }
                },
            };
            let p = range(&rr.p, "p", MAX_P);
            let bytes = range(&rr.bytes, "bytes", MAX_BYTES);
            let algorithm = match &rr.algorithm {
                None => {
                    err(
                        head,
                        format!(
                            "{}: missing (accepted for {coll}: {})",
                            what("algorithm"),
                            Pick::accepted(coll)
                        ),
                    );
                    None
                }
                Some(s) => match s.get_ref().parse::<Pick>() {
                    Ok(a) => Some(a),
                    Err(_) => {
                        err(
                            s.span().start,
                            format!(
                                "{}: unknown algorithm '{}' (accepted for {coll}: {})",
                                what("algorithm"),
                                s.get_ref(),
                                Pick::accepted(coll)
                            ),
                        );
                        None
                    }
                },
            };
            let segment = match &rr.segment {
                None => None,
                Some(s) => match to_size(s.get_ref(), MAX_SEGMENT) {
                    Ok(g) => Some(g),
                    Err(m) => {
                        err(
                            s.span().start,
                            format!(
                                "{}: {m} (accepted: 1..={MAX_SEGMENT} bytes, {SIZE_FORMS})",
                                what("segment")
                            ),
                        );
                        ok = false;
                        None
                    }
                },
            };
            let Some(algorithm) = algorithm else { continue };
            let rule = Rule {
                p,
                bytes,
                algorithm,
                segment,
                line: src.line(head),
                note: String::new(),
            };
            for (key, msg) in check_rule(coll, &rule) {
                let off = match key {
                    "p" => rr.p.as_ref().map(|s| s.span().start),
                    "bytes" => rr.bytes.as_ref().map(|s| s.span().start),
                    "segment" => rr.segment.as_ref().map(|s| s.span().start),
                    _ => rr.algorithm.as_ref().map(|s| s.span().start),
                }
                .unwrap_or(head);
                err(off, format!("{}: {msg}", what(key)));
                ok = false;
            }
            if ok {
                // Only well-formed rules take part in the shadowing test.
                rules[coll.index()].push(rule);
                let list = &rules[coll.index()];
                if let Some(msg) = shadowed(list, list.len() - 1, origin) {
                    err(head, format!("[[{coll}]] rule {}: {msg}", idx + 1));
                }
            }
        }
    }

    if errs.is_empty() {
        Ok(Table {
            origin: origin.to_string(),
            model,
            margin,
            rules,
            header: Vec::new(),
        })
    } else {
        Err(errs.join("\n"))
    }
}

const RANGE_FORMS: &str =
    "[lo, hi] (half-open: lo <= x < hi), [lo] or [lo, \"inf\"] (no upper bound), or a single number n (exactly n)";

/// A range value: `[lo, hi]`, `[lo]`, `[lo, "inf"]` or `n`.
fn to_bounds(v: &Value, max: usize, sizes: bool) -> Result<Bounds, String> {
    let one = |v: &Value, upper: bool| -> Result<usize, String> {
        if let Value::String(s) = v {
            if s.trim().eq_ignore_ascii_case("inf") {
                return if upper {
                    Ok(INF)
                } else {
                    Err("\"inf\" is only allowed as the upper bound".into())
                };
            }
            if !sizes {
                return Err(format!("expected an integer, found \"{s}\""));
            }
        }
        to_size(v, max)
    };
    let parsed = || -> Result<Bounds, String> {
        match v {
            Value::Array(a) if a.len() == 1 => Ok(Bounds::new(one(&a[0], false)?, INF)),
            Value::Array(a) if a.len() == 2 => {
                Ok(Bounds::new(one(&a[0], false)?, one(&a[1], true)?))
            }
            Value::Array(a) => Err(format!("{} elements (accepted: {RANGE_FORMS})", a.len())),
            Value::Integer(_) | Value::String(_) => {
                let n = one(v, false)?;
                Ok(Bounds::new(n, n + 1))
            }
            other => Err(format!(
                "expected a range, found a {} (accepted: {RANGE_FORMS})",
                other.type_str()
            )),
        }
    };
    parsed().map_err(|m| {
        if m.contains("accepted") {
            m
        } else {
            let forms = if sizes {
                format!("; bounds: {SIZE_FORMS}")
            } else {
                String::new()
            };
            format!("{m} (accepted: {RANGE_FORMS}{forms})")
        }
    })
}

/// A non-negative integer or size string, at most `max`.
fn to_size(v: &Value, max: usize) -> Result<usize, String> {
    let n = match v {
        Value::Integer(i) if *i < 0 => return Err(format!("{i} must not be negative")),
        Value::Integer(i) => usize::try_from(*i).map_err(|_| format!("{i} too large"))?,
        Value::String(s) => parse_size(s).map_err(|m| format!("\"{s}\": {m}"))?,
        Value::Float(f) => return Err(format!("{f} is not an integer")),
        other => return Err(format!("expected a number, found a {}", other.type_str())),
    };
    if n > max {
        return Err(format!("{n} too large (at most {max})"));
    }
    Ok(n)
}
