//! tuning.toml. (To be written.)
