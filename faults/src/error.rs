//! The crate's error type.

/// What can go wrong setting up or running a fault scenario (the findings themselves are not
/// errors: they are the [`Report`](crate::Report)'s violations).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A pgmill call failed (migrating, inserting, a worker's client).
    #[error(transparent)]
    Pgmill(#[from] pgmill::Error),
    /// The harness's own database connection failed.
    #[error("the harness's database connection: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The private cluster could not be started or restarted.
    #[error(transparent)]
    Cluster(#[from] pgmill_testdb::Error),
    /// A process or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The scenario could not go on (a worker did not start, the jobs did not drain in time).
    #[error("{0}")]
    Scenario(String),
}

impl Error {
    /// An [`Error::Io`] saying what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
