//! Segmented pipelined chain reduce. (To be written.)
use super::CallSpec;
use crate::plan::Program;

pub fn reduce(s: &CallSpec) -> Program {
    super::binomial::reduce(s)
}
