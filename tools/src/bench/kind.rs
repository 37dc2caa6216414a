//! Datatypes, ops and sizes the benchmark tools accept on the command line, and the
//! integer-valued test data whose reductions are exact in every type (so results can be
//! compared bit for bit, and against a sequential fold).

use mpi_sys::{MPI_Datatype, MPI_Op};
use pcoll_mpi::consts;
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    Double,
    Float,
    Int,
    Long,
    /// One-byte elements (`MPI_CHAR`; `byte` is accepted as a name for it).
    Char,
}

impl DType {
    pub const ACCEPTED: &'static str = "double, float, int, long, char (or byte)";
    pub fn name(self) -> &'static str {
        match self {
            DType::Double => "double",
            DType::Float => "float",
            DType::Int => "int",
            DType::Long => "long",
            DType::Char => "char",
        }
    }
    pub fn size(self) -> usize {
        match self {
            DType::Double | DType::Long => 8,
            DType::Float | DType::Int => 4,
            DType::Char => 1,
        }
    }
    pub fn handle(self) -> MPI_Datatype {
        match self {
            DType::Double => consts::dt_double(),
            DType::Float => consts::dt_float(),
            DType::Int => consts::dt_int(),
            DType::Long => consts::dt_long(),
            DType::Char => consts::dt_char(),
        }
    }
    /// Writes integer `v` as one element of this type at `out[..self.size()]`.
    pub fn encode(self, v: i64, out: &mut [u8]) {
        match self {
            DType::Double => out.copy_from_slice(&(v as f64).to_ne_bytes()),
            DType::Float => out.copy_from_slice(&(v as f32).to_ne_bytes()),
            DType::Int => out.copy_from_slice(&(v as i32).to_ne_bytes()),
            DType::Long => out.copy_from_slice(&v.to_ne_bytes()),
            DType::Char => out[0] = v as i8 as u8,
        }
    }
    /// Reads one element back as an integer (for printing mismatches).
    pub fn decode(self, b: &[u8]) -> String {
        match self {
            DType::Double => f64::from_ne_bytes(b[..8].try_into().unwrap()).to_string(),
            DType::Float => f32::from_ne_bytes(b[..4].try_into().unwrap()).to_string(),
            DType::Int => i32::from_ne_bytes(b[..4].try_into().unwrap()).to_string(),
            DType::Long => i64::from_ne_bytes(b[..8].try_into().unwrap()).to_string(),
            DType::Char => (b[0] as i8).to_string(),
        }
    }
}

impl FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "double" | "f64" => Ok(DType::Double),
            "float" | "f32" => Ok(DType::Float),
            "int" | "i32" => Ok(DType::Int),
            "long" | "i64" => Ok(DType::Long),
            "char" | "byte" | "i8" => Ok(DType::Char),
            _ => Err(format!(
                "unknown datatype '{s}' (accepted: {})",
                DType::ACCEPTED
            )),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Sum,
    Max,
    Min,
    Prod,
}

impl OpKind {
    pub const ACCEPTED: &'static str = "sum, max, min, prod";
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Sum => "sum",
            OpKind::Max => "max",
            OpKind::Min => "min",
            OpKind::Prod => "prod",
        }
    }
    pub fn handle(self) -> MPI_Op {
        match self {
            OpKind::Sum => consts::op_sum(),
            OpKind::Max => consts::op_max(),
            OpKind::Min => consts::op_min(),
            OpKind::Prod => consts::op_prod(),
        }
    }
    /// Sequential fold of two integers (the oracle; data is chosen so nothing overflows).
    pub fn apply(self, a: i64, b: i64) -> i64 {
        match self {
            OpKind::Sum => a + b,
            OpKind::Max => a.max(b),
            OpKind::Min => a.min(b),
            OpKind::Prod => a * b,
        }
    }
    /// Input element `i` of rank `r`: small integers, exact in every [`DType`] and after any
    /// fold over up to 25 ranks (sum: |v| <= 5, so |sum| <= 125 fits a char; prod: v is 2
    /// for one rank in seven and 1 otherwise, so the product stays <= 2^ceil(p/7)).
    pub fn value(self, r: usize, i: usize) -> i64 {
        match self {
            OpKind::Prod => 1 + (i + 3 * r).is_multiple_of(7) as i64,
            _ => ((i * 131 + r * 71 + 7) % 11) as i64 - 5,
        }
    }
}

impl FromStr for OpKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sum" => Ok(OpKind::Sum),
            "max" => Ok(OpKind::Max),
            "min" => Ok(OpKind::Min),
            "prod" => Ok(OpKind::Prod),
            _ => Err(format!("unknown op '{s}' (accepted: {})", OpKind::ACCEPTED)),
        }
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub use pcoll::tuning::size::{parse_size, parse_size_list as parse_sizes};

/// `65536` -> `"64K"`, `1048576` -> `"1M"`, `100` -> `"100"` (table labels).
pub fn short_size(n: usize) -> String {
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
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
        assert_eq!(parse_size("8"), Ok(8));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("16m"), Ok(16 << 20));
        assert!(parse_size("k").is_err());
        assert!(parse_size("3x").is_err());
        assert_eq!(parse_sizes("8,1k").unwrap(), vec![8, 1024]);
        assert_eq!(parse_sizes("4..32").unwrap(), vec![4, 8, 16, 32]);
        assert_eq!(short_size(65536), "64K");
        assert_eq!(short_size(100), "100");
    }

    #[test]
    fn data_is_exact() {
        // Every fold of up to 25 ranks stays inside a char (the narrowest type).
        for op in [OpKind::Sum, OpKind::Max, OpKind::Min, OpKind::Prod] {
            for i in 0..200 {
                let acc = (1..25).fold(op.value(0, i), |a, r| op.apply(a, op.value(r, i)));
                assert!((-128..=127).contains(&acc), "{op} {i} {acc}");
            }
        }
    }
}
