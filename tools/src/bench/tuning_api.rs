//! The one place `pcoll-tune` touches the tuning-table API.

pub use pcoll::tuning::{Rule, Table, TableBuilder, INF};

pub fn builder() -> TableBuilder {
    Table::builder()
}

pub fn parse(text: &str, origin: &str) -> Result<Table, String> {
    Table::parse(text, origin)
}
