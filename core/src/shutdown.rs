//! The shutdown signal: SIGTERM or SIGINT (Ctrl-C), with tokio's `signal` feature only.

/// Resolves when the process receives SIGTERM or SIGINT (on other platforms than Unix, Ctrl-C)
/// after this call: the handlers are installed when it is called, not when the future is first
/// polled. Each call listens on its own, so a server's graceful shutdown and the client's stop
/// can each wait for one. Needs the `signal` feature.
///
/// # Examples
///
/// Next to axum's graceful shutdown: the server stops taking requests, then the client finishes
/// its jobs (interrupting them after 25 s):
///
/// ```no_run
/// # async fn run<D: pgmill::driver::Driver>(
/// #     client: pgmill::Client<D>,
/// #     serve: impl std::future::Future<Output = ()>,
/// # ) {
/// // axum::serve(listener, app).with_graceful_shutdown(pgmill::shutdown_signal()).await?;
/// serve.await;
/// client.stop_with_grace(std::time::Duration::from_secs(25)).await;
/// # }
/// ```
///
/// # Panics
///
/// Outside a tokio runtime, or when the signal handlers cannot be installed.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("install the SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("install the SIGINT handler");
        async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        let ctrl_c = tokio::signal::ctrl_c();
        async move {
            ctrl_c.await.expect("install the Ctrl-C handler");
        }
    }
}
