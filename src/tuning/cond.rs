//! A rule's optional call conditions besides `p` and `bytes`: the op's kind (`op =
//! "commutative"` or `"noncommutative"`, for the collectives that reduce), for a reduce, the
//! root (`root = "zero"` or `"nonzero"`), and the call's form (`form = "blocking"` or
//! `"nonblocking"`: `MPI_Iallreduce` and `MPI_Allreduce_init` are nonblocking; the natives'
//! non-blocking collectives are other algorithms than their blocking ones, often much slower).
//! Omitted: any. `PCOLL_LEARN` writes them, since
//! it learns the cells of commutative and non-commutative ops, and of reduces at root 0 and
//! elsewhere, apart; hand-written tables rarely need them. Every rank shares both facts (the
//! op and the root are the same on every rank of a call), so rules that read them still
//! decide alike everywhere.

use crate::algo::Collective;

/// The conditions of one rule (`None`: any).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cond {
    /// `op`: `Some(true)` for commutative ops only, `Some(false)` for non-commutative only.
    pub commutative: Option<bool>,
    /// `root` (reduce only): `Some(true)` for root 0 only, `Some(false)` for any other root.
    pub root_zero: Option<bool>,
    /// `form`: `Some(true)` for the non-blocking and persistent forms only, `Some(false)` for
    /// the blocking one only.
    pub nonblocking: Option<bool>,
}

/// Accepted values of `op`.
pub const OP_FORMS: &str = "\"commutative\", \"noncommutative\"";
/// Accepted values of `root`.
pub const ROOT_FORMS: &str = "\"zero\", \"nonzero\"";
/// Accepted values of `form`.
pub const CALL_FORMS: &str = "\"blocking\", \"nonblocking\"";

impl Cond {
    /// No condition.
    pub const ANY: Cond = Cond {
        commutative: None,
        root_zero: None,
        nonblocking: None,
    };

    /// Does a call with this op kind, root (0 for the collectives without one) and form match?
    #[inline]
    pub fn matches(&self, commutative: bool, root: usize, nonblocking: bool) -> bool {
        self.commutative.is_none_or(|c| c == commutative)
            && self.root_zero.is_none_or(|z| z == (root == 0))
            && self.nonblocking.is_none_or(|n| n == nonblocking)
    }

    /// The (commutative, root, nonblocking) cells a rule of `coll` with this condition can
    /// match: the discrete cells of the shadowing test.
    pub fn cells(&self, coll: Collective) -> Vec<(bool, usize, bool)> {
        let roots: &[usize] = if coll == Collective::Reduce {
            &[0, 1]
        } else {
            &[0]
        };
        let mut out = Vec::new();
        for c in [true, false] {
            for &r in roots {
                for n in [false, true] {
                    if self.matches(c, r, n) {
                        out.push((c, r, n));
                    }
                }
            }
        }
        out
    }

    /// `op = "..."`: commutative or not.
    pub fn parse_op(s: &str) -> Result<bool, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "commutative" => Ok(true),
            "noncommutative" | "non-commutative" => Ok(false),
            _ => Err(format!("unknown op kind \"{s}\" (accepted: {OP_FORMS})")),
        }
    }

    /// `root = "..."`: root 0 or not.
    pub fn parse_root(s: &str) -> Result<bool, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zero" | "0" => Ok(true),
            "nonzero" | "non-zero" => Ok(false),
            _ => Err(format!(
                "unknown root kind \"{s}\" (accepted: {ROOT_FORMS})"
            )),
        }
    }

    /// `form = "..."`: non-blocking (and persistent) or blocking.
    pub fn parse_form(s: &str) -> Result<bool, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "nonblocking" | "non-blocking" => Ok(true),
            "blocking" => Ok(false),
            _ => Err(format!(
                "unknown call form \"{s}\" (accepted: {CALL_FORMS})"
            )),
        }
    }

    /// The problems of this condition on a rule of `coll`: `(key, message)`.
    pub fn check(&self, coll: Collective) -> Vec<(&'static str, String)> {
        let mut errs = Vec::new();
        if self.commutative.is_some() && !coll.reduces() {
            errs.push((
                "op",
                format!("{coll} takes no op (op = ... only for the collectives that reduce)"),
            ));
        }
        if self.root_zero.is_some() && coll != Collective::Reduce {
            errs.push(("root", format!("root = ... only for reduce, not {coll}")));
        }
        errs
    }

    /// The TOML lines of the condition (empty for [`Cond::ANY`]).
    pub fn to_toml(&self) -> String {
        let mut s = String::new();
        if let Some(c) = self.commutative {
            let v = if c { "commutative" } else { "noncommutative" };
            s.push_str(&format!("op = \"{v}\"\n"));
        }
        if let Some(z) = self.root_zero {
            let v = if z { "zero" } else { "nonzero" };
            s.push_str(&format!("root = \"{v}\"\n"));
        }
        if let Some(n) = self.nonblocking {
            let v = if n { "nonblocking" } else { "blocking" };
            s.push_str(&format!("form = \"{v}\"\n"));
        }
        s
    }
}

/// Why a rule with `race = true` cannot race (none: it can): the rule's algorithm is raced
/// against native, so it must be one of pcoll's, and only blocking calls are timed.
pub(crate) fn check_race(alg: crate::Pick, cond: &Cond) -> Option<String> {
    if matches!(
        alg,
        crate::Pick::Model | crate::Pick::Alg(crate::Algorithm::Native)
    ) {
        return Some(format!(
            "race = true races the rule's algorithm against native: name one of pcoll's (not '{alg}')"
        ));
    }
    (cond.nonblocking == Some(true)).then(|| {
        "race = true needs blocking calls (they are timed); a form = \"nonblocking\" rule cannot race".into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_and_spells() {
        let c = Cond {
            commutative: Some(false),
            root_zero: Some(false),
            nonblocking: None,
        };
        assert!(c.matches(false, 3, false) && !c.matches(true, 3, false));
        assert!(!c.matches(false, 0, true) && c.matches(false, 3, true));
        assert!(Cond::ANY.matches(true, 0, false) && Cond::ANY.matches(false, 7, true));
        assert_eq!(c.to_toml(), "op = \"noncommutative\"\nroot = \"nonzero\"\n");
        assert_eq!(Cond::parse_op("commutative"), Ok(true));
        assert_eq!(Cond::parse_root("nonzero"), Ok(false));
        assert_eq!(Cond::parse_form("nonblocking"), Ok(true));
        assert_eq!(Cond::parse_form("blocking"), Ok(false));
        assert!(Cond::parse_op("sum").unwrap_err().contains("accepted"));
        assert!(Cond::parse_form("async").unwrap_err().contains("accepted"));
        assert_eq!(
            c.cells(Collective::Reduce),
            vec![(false, 1, false), (false, 1, true)]
        );
        assert_eq!(Cond::ANY.cells(Collective::Bcast).len(), 4);
        let nb = Cond {
            nonblocking: Some(true),
            ..Cond::ANY
        };
        assert_eq!(nb.to_toml(), "form = \"nonblocking\"\n");
        assert!(nb.matches(true, 0, true) && !nb.matches(true, 0, false));
        assert_eq!(c.check(Collective::Bcast).len(), 2);
        assert!(c.check(Collective::Reduce).is_empty());
    }

    #[test]
    fn parsed_and_checked_in_tables() {
        use crate::tuning::Table;
        let t = Table::parse(
            "[[reduce]]\nop = \"noncommutative\"\nroot = \"nonzero\"\nalgorithm = \"binomial\"\n[[reduce]]\nalgorithm = \"pipeline\"\n",
            "t",
        )
        .unwrap();
        let alg = |c, r| {
            t.lookup_call(Collective::Reduce, 4, 100, c, r, false)
                .unwrap()
                .algorithm
        };
        assert_eq!(alg(false, 2), crate::Algorithm::Binomial.into());
        assert_eq!(alg(false, 0), crate::Algorithm::Pipeline.into());
        assert_eq!(alg(true, 2), crate::Algorithm::Pipeline.into());
        assert_eq!(t.root_from(Collective::Reduce), Some(0));
        assert_eq!(t.root_from(Collective::Allreduce), None);
        // From the smallest size a rule reads the root at.
        let t = Table::parse(
            "[[reduce]]\nbytes = [1024, 4096]\nalgorithm = \"native\"\n[[reduce]]\nbytes = [131072, \"inf\"]\nroot = \"nonzero\"\nalgorithm = \"shm\"\n[[reduce]]\nbytes = [65536, \"inf\"]\nroot = \"zero\"\nalgorithm = \"pipeline\"\n",
            "t",
        )
        .unwrap();
        assert_eq!(t.root_from(Collective::Reduce), Some(65536));
        // A rule for the non-blocking form only: the blocking call skips it.
        let t = Table::parse(
            "[[allreduce]]\nform = \"nonblocking\"\nalgorithm = \"shm\"\n[[allreduce]]\nalgorithm = \"native\"\n",
            "t",
        )
        .unwrap();
        let alg = |n| {
            t.lookup_call(Collective::Allreduce, 2, 1 << 20, true, 0, n)
                .unwrap()
                .algorithm
        };
        assert_eq!(alg(true), crate::Algorithm::Shm.into());
        assert_eq!(alg(false), crate::Algorithm::Native.into());
        for (text, want) in [
            ("[[reduce]]\nform = \"async\"\nalgorithm = \"native\"\n", "accepted: \"blocking\""),
            ("[[reduce]]\nform = \"blocking\"\nalgorithm = \"native\"\n[[reduce]]\nalgorithm = \"binomial\"\n[[reduce]]\nform = \"nonblocking\"\nalgorithm = \"shm\"\n", "never match"),
            ("[[bcast]]\nop = \"commutative\"\nalgorithm = \"native\"\n", "takes no op"),
            ("[[allreduce]]\nroot = \"zero\"\nalgorithm = \"native\"\n", "only for reduce"),
            ("[[reduce]]\nop = \"sum\"\nalgorithm = \"native\"\n", "accepted: \"commutative\""),
            ("[[reduce]]\nroot = \"zero\"\nalgorithm = \"native\"\n[[reduce]]\nroot = \"zero\"\nalgorithm = \"binomial\"\n", "never match"),
        ] {
            let e = Table::parse(text, "t").unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
