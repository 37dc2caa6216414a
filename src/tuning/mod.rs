//! TEMP STUB (replaced by the tuning branch)
use crate::{Algorithm, Collective, CostParams};
#[derive(Clone, Copy, Debug)]
pub struct Choice {
    pub algorithm: Algorithm,
    pub segment: Option<usize>,
    pub rule: usize,
    pub origin_line: usize,
}
#[derive(Clone, Debug)]
pub struct Table;
impl Table {
    pub fn lookup(&self, _c: Collective, _p: usize, _b: usize) -> Option<Choice> {
        None
    }
    pub fn model(&self) -> CostParams {
        CostParams::default()
    }
    pub fn origin(&self) -> &str {
        "built-in"
    }
}
