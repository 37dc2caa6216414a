//! `tuning.toml` text -> [`Table`], with `origin:line:col` on every error.
//!
//! Two stages: serde (with `deny_unknown_fields` and [`toml::Spanned`] values) catches syntax
//! errors, unknown keys/sections and wrong types; then each value is converted and checked
//! here with its span, and the shared semantic checks of `super` run per rule.

use super::size::{parse_size, SIZE_FORMS};
use super::{
    check_margin, check_model, check_rule, shadowed, Bounds, Cond, Rule, Table, INF, MAX_BYTES,
    MAX_P, MAX_SEGMENT,
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
    /// `[model.net]`: the parameters between nodes (node-aware algorithms).
    net: Option<Spanned<RawNet>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNet {
    alpha: Option<Spanned<f64>>,
    beta: Option<Spanned<f64>>,
    gamma: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    p: Option<Spanned<Value>>,
    bytes: Option<Spanned<Value>>,
    algorithm: Option<Spanned<String>>,
    segment: Option<Spanned<Value>>,
    /// `op = "commutative" | "noncommutative"` ([`Cond`]).
    op: Option<Spanned<String>>,
    /// `root = "zero" | "nonzero"` (reduce; [`Cond`]).
    root: Option<Spanned<String>>,
    /// `form = "blocking" | "nonblocking"` ([`Cond`]).
    form: Option<Spanned<String>>,
    /// `measured = false`: a carried default ([`Rule::measured`]).
    measured: Option<bool>,
    /// `race = true`: raced against native in the running program ([`Rule::race`]).
    race: Option<Spanned<bool>>,
}

/// Maps byte offsets to `origin:line:col`.
struct Src<'a> {
    text: &'a str,
    origin: &'a str,
    /// Byte offsets of the text's newlines, ascending: each rule's line is a binary search
    /// (counting the newlines before every rule's offset was half of a table's parse).
    newlines: Vec<usize>,
}

impl<'a> Src<'a> {
    fn new(text: &'a str, origin: &'a str) -> Src<'a> {
        let newlines = text
            .bytes()
            .enumerate()
            .filter_map(|(i, b)| (b == b'\n').then_some(i))
            .collect();
        Src {
            text,
            origin,
            newlines,
        }
    }
    /// 1-based line and column (in characters) of byte offset `off`.
    fn line_col(&self, off: usize) -> (usize, usize) {
        let off = off.min(self.text.len());
        let before = self.newlines.partition_point(|&i| i < off);
        let start = before.checked_sub(1).map_or(0, |k| self.newlines[k] + 1);
        let col = String::from_utf8_lossy(&self.text.as_bytes()[start..off])
            .chars()
            .count()
            + 1;
        (before + 1, col)
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

/// Errors collected while converting, each with `origin:line:col` and the line's text.
struct Errs<'a> {
    src: &'a Src<'a>,
    list: Vec<String>,
}

impl Errs<'_> {
    fn push(&mut self, off: usize, msg: String) {
        let e = format!("{}: {msg}{}", self.src.at(off), self.src.snippet(off));
        self.list.push(e);
    }
}

pub(super) fn parse(text: &str, origin: &str) -> Result<Table, String> {
    let src = Src::new(text, origin);
    let raw = raw_file(&src)?;
    let mut errs = Errs {
        src: &src,
        list: Vec::new(),
    };
    let (model, margin, model_net) = match raw.model {
        Some(m) => {
            let mut m = m.into_inner();
            let net = m.net.take().map(|n| n.into_inner());
            let (cp, margin) = model_section(m, &mut errs);
            let net = net.map(|n| net_section(n, &cp, &mut errs));
            (Some(cp), margin, net)
        }
        None => (None, None, None),
    };
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
            let Some(rule) = rule(coll, idx, sr, &mut errs) else {
                continue;
            };
            // Only well-formed rules take part in the shadowing test.
            rules[coll.index()].push(rule);
            let list = &rules[coll.index()];
            if let Some(msg) = shadowed(coll, list, list.len() - 1, origin) {
                errs.push(head, format!("[[{coll}]] rule {}: {msg}", idx + 1));
            }
        }
    }
    if errs.list.is_empty() {
        Ok(Table {
            origin: origin.to_string(),
            model,
            model_net,
            margin,
            rules,
            header: Vec::new(),
        })
    } else {
        Err(errs.list.join("\n"))
    }
}

/// The serde stage: syntax, unknown keys and sections, wrong types (with hints).
fn raw_file(src: &Src) -> Result<RawFile, String> {
    toml::from_str(src.text).map_err(|e| {
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
            None => format!("{}: {msg}", src.origin),
        }
    })
}

/// `[model]`: the cost parameters (defaults for missing keys) and the margin, if valid.
fn model_section(m: RawModel, errs: &mut Errs) -> (CostParams, Option<f64>) {
    let mut margin = None;
    if let Some(g) = &m.margin {
        match check_margin(*g.get_ref()) {
            Some(msg) => errs.push(g.span().start, format!("[model] margin: {msg}")),
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
        errs.push(off, format!("[model] {key}: {msg}"));
    }
    (cp, margin)
}

/// `[model.net]`: the parameters between nodes; unset keys are the node's own (`node`).
fn net_section(n: RawNet, node: &CostParams, errs: &mut Errs) -> CostParams {
    let get = |v: &Option<Spanned<f64>>, dflt: f64| v.as_ref().map_or(dflt, |s| *s.get_ref());
    let np = CostParams {
        alpha: get(&n.alpha, node.alpha),
        beta: get(&n.beta, node.beta),
        gamma: get(&n.gamma, node.gamma),
    };
    for (key, msg) in check_model(&np) {
        let sp = match key {
            "alpha" => &n.alpha,
            "beta" => &n.beta,
            _ => &n.gamma,
        };
        let off = sp.as_ref().map_or(0, |s| s.span().start);
        errs.push(off, format!("[model.net] {key}: {msg}"));
    }
    np
}

/// Rule `idx` of `coll`'s section, when every value converts and passes the checks (the
/// errors go to `errs`).
fn rule(coll: Collective, idx: usize, sr: Spanned<RawRule>, errs: &mut Errs) -> Option<Rule> {
    let head = sr.span().start;
    let rr = sr.into_inner();
    let what = |key: &str| format!("[[{coll}]] rule {}: {key}", idx + 1);
    let mut ok = true;
    let mut range = |v: &Option<Spanned<Value>>, key: &str, max: usize| match v {
        None => Bounds::ANY,
        Some(s) => match to_bounds(s.get_ref(), max, key == "bytes") {
            Ok(b) => b,
            Err(m) => {
                errs.push(s.span().start, format!("{}: {m}", what(key)));
                ok = false;
                Bounds::ANY
            }
        },
    };
    let p = range(&rr.p, "p", MAX_P);
    let bytes = range(&rr.bytes, "bytes", MAX_BYTES);
    let algorithm = rule_algorithm(coll, &rr.algorithm, head, &what("algorithm"), errs);
    let segment = match &rr.segment {
        None => None,
        Some(s) => match to_size(s.get_ref(), MAX_SEGMENT) {
            Ok(g) => Some(g),
            Err(m) => {
                let msg = format!(
                    "{}: {m} (accepted: 1..={MAX_SEGMENT} bytes, {SIZE_FORMS})",
                    what("segment")
                );
                errs.push(s.span().start, msg);
                ok = false;
                None
            }
        },
    };
    let mut kind = |v: &Option<Spanned<String>>, key: &str, f: fn(&str) -> Result<bool, String>| {
        let s = v.as_ref()?;
        f(s.get_ref())
            .map_err(|m| {
                errs.push(s.span().start, format!("{}: {m}", what(key)));
                ok = false;
            })
            .ok()
    };
    let cond = Cond {
        commutative: kind(&rr.op, "op", Cond::parse_op),
        root_zero: kind(&rr.root, "root", Cond::parse_root),
        nonblocking: kind(&rr.form, "form", Cond::parse_form),
    };
    let rule = Rule {
        p,
        bytes,
        algorithm: algorithm?,
        segment,
        cond,
        measured: rr.measured.unwrap_or(true),
        race: rr.race.as_ref().is_some_and(|r| *r.get_ref()),
        line: errs.src.line(head),
        note: String::new(),
    };
    for (key, msg) in check_rule(coll, &rule) {
        let off = match key {
            "p" => rr.p.as_ref().map(|s| s.span().start),
            "bytes" => rr.bytes.as_ref().map(|s| s.span().start),
            "segment" => rr.segment.as_ref().map(|s| s.span().start),
            "op" => rr.op.as_ref().map(|s| s.span().start),
            "root" => rr.root.as_ref().map(|s| s.span().start),
            "race" => rr.race.as_ref().map(|s| s.span().start),
            _ => rr.algorithm.as_ref().map(|s| s.span().start),
        }
        .unwrap_or(head);
        errs.push(off, format!("{}: {msg}", what(key)));
        ok = false;
    }
    ok.then_some(rule)
}

/// A rule's `algorithm` (missing or unknown: an error naming the accepted ones).
fn rule_algorithm(
    coll: Collective,
    v: &Option<Spanned<String>>,
    head: usize,
    what: &str,
    errs: &mut Errs,
) -> Option<Pick> {
    let accepted = Pick::accepted(coll);
    match v {
        None => {
            errs.push(
                head,
                format!("{what}: missing (accepted for {coll}: {accepted})"),
            );
            None
        }
        Some(s) => match s.get_ref().parse::<Pick>() {
            Ok(a) => Some(a),
            Err(_) => {
                let msg = format!(
                    "{what}: unknown algorithm '{}' (accepted for {coll}: {accepted})",
                    s.get_ref()
                );
                errs.push(s.span().start, msg);
                None
            }
        },
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

#[cfg(test)]
mod tests {
    use super::Src;

    /// The line and column of every offset, against counting from the start.
    #[test]
    fn line_col_counts_lines_and_characters() {
        for text in [
            "",
            "a",
            "\n",
            "ab\ncd\n\né€x\n[[reduce]]\nbytes = 1",
            "\n\nx",
        ] {
            let src = Src::new(text, "t");
            for off in 0..=text.len() + 2 {
                let o = off.min(text.len());
                let before = &text.as_bytes()[..o];
                let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
                let start = before
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                let col = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
                assert_eq!(src.line_col(off), (line, col), "{text:?} at {off}");
            }
        }
    }
}
