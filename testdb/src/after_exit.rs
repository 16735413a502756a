//! Work that runs after this process exits, however it exits: the watchdogs.

use std::process::{Command, Stdio};

/// Quotes a string for `sh`.
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Starts `script` in its own process group so it outlives a killed process; it runs after this
/// process exits.
pub(crate) fn spawn_after_exit(script: &str) {
    use std::os::unix::process::CommandExt;
    let full = format!(
        "while kill -0 {} 2>/dev/null; do sleep 0.2; done; {script}",
        std::process::id()
    );
    let _ = Command::new("sh")
        .args(["-c", &full])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    // The child is not waited for on purpose: it must outlive this process.
}
