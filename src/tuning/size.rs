//! Byte sizes as written in `tuning.toml` and in `PCOLL_SEGMENT`: a plain integer, or a
//! string with a binary suffix (`"64KiB"`, `"4 MiB"`, `"1GiB"`; case-insensitive).

/// Accepted spellings, for error messages.
pub const SIZE_FORMS: &str =
    "a non-negative integer of bytes, or a string like \"16384\", \"64KiB\" (or \"64k\"), \"4MiB\", \"1GiB\" (binary units)";

/// Parses `"65536"`, `"64KiB"`, `"4 MiB"`, `"1GiB"`, `"1TiB"`, and the short forms `"64k"`,
/// `"4m"`, `"1g"` (`kb`, `mb`, `gb` too): binary units, always (1k = 1024). Whitespace
/// around the number and between number and unit is allowed. `Err` carries a short reason
/// (the caller adds the accepted forms). The one size parser of the project: tuning.toml,
/// `PCOLL_SEGMENT`/`PCOLL_CHUNK`, and the tools' `--sizes`/`--bytes` lists
/// ([`parse_size_list`]).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(if t.starts_with('-') {
            "must not be negative".to_string()
        } else {
            "not a size".to_string()
        });
    }
    let (num, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("unknown unit '{}'", unit.trim())),
    };
    let n: usize = num.parse().map_err(|_| "too large".to_string())?;
    n.checked_mul(1usize << shift)
        .ok_or_else(|| "too large".to_string())
}

/// A list of sizes: comma-separated values (`"8,1k,64k"`) and ranges `lo..hi`, the powers of
/// two from `lo` to `hi` (both included when powers of two: `"8..4m"`), in the order given.
pub fn parse_size_list(s: &str) -> Result<Vec<usize>, String> {
    let one = |x: &str| {
        parse_size(x).map_err(|m| format!("bad size '{}': {m} ({SIZE_LIST_FORMS})", x.trim()))
    };
    let mut out = Vec::new();
    for part in s.split(',').filter(|x| !x.trim().is_empty()) {
        if let Some((a, b)) = part.split_once("..") {
            let (lo, hi) = (one(a)?, one(b)?);
            if lo == 0 || lo > hi {
                return Err(format!("bad size range '{part}': need 0 < lo <= hi"));
            }
            let mut x = lo;
            while x <= hi {
                out.push(x);
                match x.checked_mul(2) {
                    Some(y) => x = y,
                    None => break,
                }
            }
        } else {
            out.push(one(part)?);
        }
    }
    if out.is_empty() {
        return Err(format!("no sizes given ({SIZE_LIST_FORMS})"));
    }
    Ok(out)
}

/// Accepted spellings of a size list, for error messages.
pub const SIZE_LIST_FORMS: &str =
    "accepted: comma-separated sizes like 8, 64k, 4MiB, or lo..hi for the powers of two in between";

/// Formats a byte count for humans: `65536` -> `"64KiB"` when exact, else the plain number.
pub fn format_size(n: usize) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n != 0 && n.is_multiple_of(1usize << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size(" 16384 "), Ok(16384));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("64 kib"), Ok(65536));
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("7b"), Ok(7));
        assert_eq!(parse_size("64KB"), Ok(65536)); // binary, like every unit here
        assert_eq!(parse_size("64k"), Ok(65536));
        assert!(parse_size("64kx").unwrap_err().contains("unknown unit"));
        assert!(parse_size("-3").unwrap_err().contains("negative"));
        assert!(parse_size("").is_err());
        assert!(parse_size("abc").is_err());
        assert!(parse_size("1.5MiB").is_err());
        assert!(parse_size("99999999999999999999999").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }

    #[test]
    fn format_round_trips() {
        for n in [0, 1, 1000, 1024, 65536, 65537, 3 << 20, 5 << 30] {
            assert_eq!(parse_size(&format_size(n)), Ok(n), "{n}");
        }
        assert_eq!(format_size(65536), "64KiB");
    }
}
