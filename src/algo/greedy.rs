//! Lowery–Langou greedy reduce programs (bi-directional and uni-directional). (To be written.)
use super::CallSpec;
use crate::error::Error;
use crate::plan::Program;

pub fn reduce(_s: &CallSpec, _bidirectional: bool) -> Result<Program, Error> {
    Err(Error::Unsupported("greedy not yet implemented".into()))
}
pub fn allreduce(_s: &CallSpec) -> Result<Program, Error> {
    Err(Error::Unsupported("greedy not yet implemented".into()))
}
