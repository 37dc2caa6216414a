//! Butterfly (Rabenseifner; Rabenseifner–Träff for p != 2^k) programs. (To be written.)
use super::CallSpec;
use crate::error::Error;
use crate::plan::Program;

fn todo() -> Result<Program, Error> {
    Err(Error::Unsupported("butterfly not yet implemented".into()))
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
