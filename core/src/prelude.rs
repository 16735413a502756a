//! The names every worker file needs: `use pgmill::prelude::*;`.
//!
//! # Examples
//!
//! ```
//! use pgmill::prelude::*;
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Resize {
//!     image_id: i64,
//! }
//!
//! impl JobArgs for Resize {
//!     const KIND: &'static str = "resize";
//! }
//!
//! struct ResizeWorker;
//!
//! impl Worker<Resize> for ResizeWorker {
//!     async fn work(&self, job: &Job<Resize>) -> Result<(), JobError> {
//!         tracing::info!(image_id = job.args.image_id, "resizing");
//!         Ok(())
//!     }
//! }
//! ```

pub use crate::{InsertOpts, Job, JobArgs, JobError, Worker};
