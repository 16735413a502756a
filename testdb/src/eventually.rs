//! Waiting for a condition instead of for a time.

use std::time::Duration;

/// How long [`eventually`] waits between two checks.
const CHECK_EVERY: Duration = Duration::from_millis(10);

/// Waits until `check` returns true, for at most `timeout`, and says whether it did.
///
/// `check` runs at once, then every 10 ms until it returns true or `timeout` has passed (it
/// runs once more at the deadline, so a condition that holds by then counts). For tests: wait
/// for the state a test needs (a row written, a job completed, a leader elected), never for a
/// fixed time that is too short on a slow machine and wasted on a fast one. The caller decides
/// what a timeout means, usually a failed assertion that says what never happened.
///
/// Runs on tokio: it sleeps with `tokio::time::sleep`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// # #[tokio::main]
/// # async fn main() {
/// let started = tokio::time::Instant::now();
/// // In a test: `async || client.is_leader()`, `async || completed(&pool).await == 10`, ...
/// let done = pgmill_testdb::eventually(Duration::from_secs(10), async || {
///     started.elapsed() >= Duration::from_millis(30)
/// })
/// .await;
/// assert!(done, "it never happened");
/// # }
/// ```
pub async fn eventually(timeout: Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(CHECK_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::eventually;

    #[tokio::test]
    async fn true_once_the_condition_holds() {
        let mut checks = 0;
        let held = eventually(Duration::from_secs(10), async || {
            checks += 1;
            checks == 3
        })
        .await;
        assert!(held);
        assert_eq!(checks, 3, "checked until it held, not after");
    }

    #[tokio::test]
    async fn false_when_the_time_runs_out() {
        let started = tokio::time::Instant::now();
        let mut checks = 0;
        let held = eventually(Duration::from_millis(50), async || {
            checks += 1;
            false
        })
        .await;
        assert!(!held);
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(checks >= 2, "checked again before giving up: {checks}");
    }
}
