//! The supervisor: runs a service, restarting it after a backoff when it panics or ends early, so
//! one failing service never takes the client down.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{error, warn};

/// Default time before a failed service is restarted.
pub const DEFAULT_SUPERVISOR_BACKOFF: Duration = Duration::from_secs(10);

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
