//! Stopping with a grace period, and on SIGTERM/SIGINT.

use std::time::Duration;

#[cfg(feature = "signal")]
use tracing::info;
use tracing::warn;

use crate::client::Client;
use crate::driver::Driver;

impl<D: Driver> Client<D> {
    /// Stops softly ([`Client::stop`]), and hard ([`Client::stop_and_cancel`]) if running jobs
    /// have not finished within `grace`: interrupted jobs go back to `available` with their
    /// attempt given back, so another client runs them at once instead of after a rescue. True
    /// when the soft stop finished within the grace period.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) {
    /// // e.g. when the orchestrator asks the process to end
    /// if !client.stop_with_grace(std::time::Duration::from_secs(25)).await {
    ///     tracing::warn!("running jobs were interrupted");
    /// }
    /// # }
    /// ```
    pub async fn stop_with_grace(&self, grace: Duration) -> bool {
        if tokio::time::timeout(grace, self.stop()).await.is_ok() {
            return true;
        }
        warn!(
            ?grace,
            "jobs still running after the grace period; interrupting them"
        );
        self.stop_and_cancel().await;
        false
    }

    /// Waits for SIGTERM or SIGINT (Ctrl-C) received after this call, then stops as
    /// [`Client::stop_with_grace`] does; a second signal during the grace period interrupts
    /// running jobs at once. The future resolves to true when the soft stop finished in time.
    /// Needs the `signal` feature.
    ///
    /// In a plain binary, start the client and await this last:
    ///
    /// ```no_run
    /// # async fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) -> pgmill::Result<()> {
    /// client.start().await?;
    /// client.stop_on_signal(std::time::Duration::from_secs(25)).await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Next to a server with a graceful shutdown of its own (axum's `with_graceful_shutdown`),
    /// hand the server [`shutdown_signal`](crate::shutdown_signal) and await this beside it, or
    /// stop the client with [`Client::stop_with_grace`] once the server is done.
    #[cfg(feature = "signal")]
    pub fn stop_on_signal(&self, grace: Duration) -> impl Future<Output = bool> + Send + '_ {
        let first = crate::shutdown_signal();
        async move {
            first.await;
            // Listening for the second signal before anything else, so none is missed; created
            // after the first arrived, so the first is not taken for it.
            let second = crate::shutdown_signal();
            info!(
                ?grace,
                "shutdown signal received; stopping (a second signal interrupts jobs)"
            );
            tokio::select! {
                soft = self.stop_with_grace(grace) => soft,
                () = second => {
                    info!("second shutdown signal; interrupting running jobs");
                    self.stop_and_cancel().await;
                    false
                }
            }
        }
    }
}
