//! Pure schedule generators: plain integers in, per-rank step lists out. No buffers, no MPI.

pub mod blocks;
pub mod butterfly;
pub mod circulant;
pub mod greedy;
pub mod pipeline;
