//! A "process" that can die abruptly: a tokio runtime of its own, shut down without running any
//! cleanup, as a SIGKILL would. Its connections drop, its leases and rows stay behind, its jobs
//! stay `running`; the database sees exactly what it sees when a worker process is killed.

use std::future::Future;

use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// A runtime standing in for a separate worker process.
#[derive(Debug)]
pub struct DoomedProcess {
    runtime: Option<Runtime>,
}

impl Default for DoomedProcess {
    fn default() -> Self {
        Self::new()
    }
}

impl DoomedProcess {
    /// Starts the "process" (two worker threads).
    ///
    /// # Panics
    ///
    /// When the runtime cannot be built.
    pub fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        DoomedProcess {
            runtime: Some(runtime),
        }
    }

    /// Runs `fut` inside the process and returns its output, awaited from outside.
    ///
    /// # Panics
    ///
    /// When the process was killed or `fut` panicked.
    pub async fn run<F>(&self, fut: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.runtime
            .as_ref()
            .expect("process alive")
            .spawn(async move {
                let _ = tx.send(fut.await);
            });
        rx.await.expect("the process ran the future")
    }

    /// Kills the process: every task stops where it is, nothing is cleaned up.
    pub fn kill(mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for DoomedProcess {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
