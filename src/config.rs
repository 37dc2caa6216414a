//! TEMP STUB
use crate::tuning::Table;
use crate::Algorithm;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FallbackPolicy {
    Silent,
    Warn,
    Error,
}
#[derive(Debug)]
pub struct Config {
    pub force: [Option<Algorithm>; 4],
    pub segment: Option<usize>,
    pub fallback: FallbackPolicy,
    pub log: Option<String>,
    pub stats: bool,
}
impl Config {
    pub fn from_env() -> (Config, Vec<String>) {
        let g = |k: &str| std::env::var(k).ok();
        let mut f = [None; 4];
        for c in crate::Collective::ALL {
            f[c.index()] = g(c.env_var()).and_then(|s| s.parse().ok());
        }
        (
            Config {
                force: f,
                segment: None,
                fallback: FallbackPolicy::Warn,
                log: g("PCOLL_LOG"),
                stats: g("PCOLL_STATS").as_deref() == Some("1"),
            },
            vec![],
        )
    }
    pub fn load_table(&self) -> (Table, Vec<String>) {
        (Table, vec![])
    }
}
