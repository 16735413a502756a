//! The start/stop contract every background component shares.
//!
//! `start` spawns the component's task and returns at once; `stop` is idempotent, safe before
//! `start`, and waits for the task to end.

use std::future::Future;

use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::error;

/// One background task with a stop signal.
#[derive(Debug, Default)]
pub(crate) struct Service {
    token: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Service {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The token the task watches; cancelled by [`Service::stop`].
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Spawns the task; does nothing if it already runs.
    pub(crate) async fn start<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut guard = self.task.lock().await;
        if guard.is_none() {
            *guard = Some(tokio::spawn(task));
        }
    }

    /// Signals the task to stop and waits for it to end.
    pub(crate) async fn stop(&self) {
        self.token.cancel();
        self.join().await;
    }

    /// Waits for the task to end without signalling it.
    pub(crate) async fn join(&self) {
        let handle = self.task.lock().await.take();
        if let Some(handle) = handle
            && let Err(e) = handle.await
        {
            error!(error = %e, "service task ended abnormally");
        }
    }
}
