//! The measurement tools of pcoll, MPI programs built against one MPI like `libpcoll.so`:
//! `pcoll-bench` (native vs every pcoll algorithm, `src/bin/pcoll-bench.rs`) and `pcoll-tune`
//! (writes a `tuning.toml`, `src/bin/pcoll-tune.rs`); their shared code is [`bench`]. They
//! link the library's crate `pcoll-mpi` as an rlib, so no `LD_PRELOAD` is needed.

pub mod bench;
