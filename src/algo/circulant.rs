//! Circulant (Träff) programs: reduce (reversed n-block broadcast), allreduce, reduce_scatter
//! (reversed all-broadcast), allgatherv (all-broadcast). (To be written.)
use super::CallSpec;
use crate::error::Error;
use crate::plan::Program;

fn todo() -> Result<Program, Error> {
    Err(Error::Unsupported("circulant not yet implemented".into()))
}
pub fn reduce(_s: &CallSpec) -> Result<Program, Error> {
    todo()
}
pub fn allreduce(_s: &CallSpec) -> Result<Program, Error> {
    todo()
}
pub fn reduce_scatter(_s: &CallSpec) -> Result<Program, Error> {
    todo()
}
pub fn allgatherv(_s: &CallSpec) -> Result<Program, Error> {
    todo()
}
