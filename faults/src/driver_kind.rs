//! Which pgmill driver a fault worker runs on.

use std::fmt;

/// One of pgmill's three drivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DriverKind {
    /// pgmill-driver-sqlx.
    Sqlx,
    /// pgmill-driver-tokio-postgres.
    TokioPostgres,
    /// pgmill-driver-diesel.
    Diesel,
}

impl DriverKind {
    /// The name the worker binary's `--driver` takes.
    pub fn name(self) -> &'static str {
        match self {
            DriverKind::Sqlx => "sqlx",
            DriverKind::TokioPostgres => "tokio-postgres",
            DriverKind::Diesel => "diesel",
        }
    }
}

impl fmt::Display for DriverKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
