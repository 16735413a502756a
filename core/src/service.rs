//! The start/stop contract every background component shares, and the supervisor that restarts
//! a component when it fails.
//!
//! `start` spawns the component's task and returns at once; `stop` is idempotent, safe before
//! `start`, and waits for the task to end. Under [`supervise`], a component that panics or ends on
//! its own is restarted after a backoff, so one failing component never takes the client down.

use std::future::Future;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{error, warn};

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

/// Spawns `run(stop)` under a supervisor as a [`Service`].
pub(crate) async fn spawn_supervised<F, Fut>(
    name: &'static str,
    backoff: Duration,
    run: F,
) -> Service
where
    F: Fn(CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let service = Service::new();
    let stop = service.token();
    service
        .start(supervise(name, backoff, stop.clone(), move || {
            run(stop.clone())
        }))
        .await;
    service
}

/// Default time before a failed service is restarted.
pub(crate) const DEFAULT_SUPERVISOR_BACKOFF: Duration = Duration::from_secs(10);

/// Runs `make()` until `stop`; restarts it `backoff` after it panics or returns on its own.
pub(crate) async fn supervise<F, Fut>(
    name: &'static str,
    backoff: Duration,
    stop: CancellationToken,
    mut make: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        let result = tokio::spawn(make()).await;
        if stop.is_cancelled() {
            return;
        }
        match result {
            Err(e) if e.is_panic() => {
                let panic = e.into_panic();
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic".to_owned());
                error!(service = name, panic = %message, ?backoff, "service panicked; restarting after backoff");
            }
            Err(e) => {
                error!(service = name, error = %e, "service task failed; restarting after backoff")
            }
            Ok(()) => warn!(
                service = name,
                "service ended on its own; restarting after backoff"
            ),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
    }
}
