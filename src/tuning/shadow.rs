//! The one rule that can never match: a rule whose every cell (`p`, bytes, op kind, root)
//! earlier rules of its collective take (first match wins), reported by the parser and the
//! builder, and dropped by the learned table when its learned rules cover a user's rule.

use super::{Bounds, Rule};
use crate::algo::Collective;

/// If every point of rule `j` is caught by earlier rules, a message naming them.
///
/// Exact test by coordinate compression: the bounds of the earlier rules cut rule `j`'s box
/// into cells; each cell lies entirely inside or outside each earlier box, so the rule is
/// dead iff every cell's lower corner, for each op kind and root its conditions let through
/// ([`Cond::cells`]), is inside some earlier box.
pub(crate) fn shadowed(coll: Collective, rules: &[Rule], j: usize, origin: &str) -> Option<String> {
    let r = &rules[j];
    if r.p.lo >= r.p.hi || r.bytes.lo >= r.bytes.hi {
        return None; // reported as an empty range
    }
    let earlier: Vec<&Rule> = rules[..j]
        .iter()
        .filter(|e| e.p.intersects(&r.p) && e.bytes.intersects(&r.bytes))
        .collect();
    if earlier.is_empty() {
        return None;
    }
    let cuts = |own: Bounds, f: &dyn Fn(&Rule) -> Bounds| {
        let mut v = vec![own.lo];
        for e in &earlier {
            let b = f(e);
            for x in [b.lo, b.hi] {
                if own.lo < x && x < own.hi {
                    v.push(x);
                }
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    };
    let xs = cuts(r.p, &|e| e.p);
    let ys = cuts(r.bytes, &|e| e.bytes);
    let kinds = r.cond.cells(coll);
    let all = xs.iter().all(|&x| {
        ys.iter().all(|&y| {
            kinds
                .iter()
                .all(|&(c, root, n)| earlier.iter().any(|e| e.matches(x, y, c, root, n)))
        })
    });
    if !all {
        return None;
    }
    let by: Vec<String> = rules[..j]
        .iter()
        .enumerate()
        .filter(|(_, e)| e.p.intersects(&r.p) && e.bytes.intersects(&r.bytes))
        .map(|(i, e)| {
            if e.line > 0 {
                format!("line {}", e.line)
            } else {
                format!("rule {}", i + 1)
            }
        })
        .collect();
    Some(format!(
        "rule can never match: every (p, bytes) it covers is taken by the earlier {} {} of {origin} (first match wins; remove it or move it up)",
        if by.len() == 1 { "rule at" } else { "rules at" },
        by.join(", ")
    ))
}
