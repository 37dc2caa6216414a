//! libpcoll.so: PMPI interposition of `MPI_Reduce`, `MPI_Allreduce`, `MPI_Reduce_scatter`,
//! `MPI_Allgatherv`, `MPI_Bcast`, `MPI_Allgather` and `MPI_Reduce_scatter_block` (C, Fortran,
//! large-count), serving them with pcoll's algorithms or forwarding them to the MPI's own.
//!
//! All `unsafe` of the library lives in this crate (the tools' own MPI calls are in
//! `tools/src/bench/`), each block with a `// SAFETY:` line:
//! `ffi/` converts and checks arguments, `pmpi.rs` is the only caller of point-to-point
//! `PMPI_*`, `comm.rs`/`mpi_types.rs` read MPI facts.
//!
//! The measurement tools `pcoll-bench` and `pcoll-tune` live in the `pcoll-tools` crate
//! (`tools/`), which uses this crate as an rlib: the exported entry points (`ffi::c`), the
//! run-time overrides and the resolver (`state::force`, `state::set_segment`,
//! `state::global`, `state::resolver`) and the MPI constants (`consts`). This crate itself
//! depends on neither clap nor serde_json.
//!
//! Its docs are for pcoll's own developers and link private items freely: read them with
//! `cargo doc -p pcoll-mpi --document-private-items`.

#![allow(rustdoc::private_intra_doc_links)]

pub mod agree;
pub mod comm;
pub mod consts;
pub mod dispatch;
pub mod ffi;
pub mod foreign;
pub mod gate;
pub mod held;
pub mod learn;
pub mod mpi_types;
pub mod nbc;
pub mod nodes;
pub mod pack;
pub mod pmpi;
pub mod shm;
pub mod standin;
pub mod state;
