//! pcoll core: schedules, programs, executor, tuning table, cost model and simulator.
//!
//! Pure Rust: no MPI and no `unsafe` (`#![forbid(unsafe_code)]`). The `pcoll-mpi` crate in
//! `cdylib/` puts this behind the MPI C ABI.
#![forbid(unsafe_code)]

pub mod agree;
pub mod algo;
pub mod config;
pub mod decide;
pub mod elide;
pub mod envvars;
pub mod error;
pub mod exec;
pub mod learn;
pub mod model;
pub mod mpi;
pub mod nodes;
pub mod plan;
pub mod sched;
pub mod segment;
pub mod transport;
pub mod tuning;

pub use algo::{Algorithm, CallSpec, Collective, CostParams, Pick};
pub use error::Error;
pub use plan::{Buf, Op, Piece, Program};
