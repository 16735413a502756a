//! Progress of the benchmark's long phases, drawn on stderr (only when it is a terminal).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

/// A progress bar or spinner for one phase; clones share it; cleared when finished or dropped.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar counting up to `len` items.
    pub(crate) fn bar(len: u64, label: impl Into<String>) -> Self {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg:32} [{bar:30}] {human_pos}/{human_len} ({elapsed}, eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let bar = bar.with_finish(ProgressFinish::AndClear);
        bar.set_message(label.into());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar }
    }

    /// A spinner for a phase of unknown length.
    pub(crate) fn spinner(label: impl Into<String>) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        let bar = bar.with_finish(ProgressFinish::AndClear);
        bar.set_message(label.into());
        bar.enable_steady_tick(Duration::from_millis(100));
        Progress { bar }
    }

    /// Sets the count done.
    pub(crate) fn set(&self, done: u64) {
        self.bar.set_position(done);
    }

    /// Adds to the count done.
    pub(crate) fn inc(&self, delta: u64) {
        self.bar.inc(delta);
    }

    /// Clears the bar.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Writes a note for people on stderr (between phases, when no bar is drawn).
pub(crate) fn note(message: &str) {
    eprintln!("{message}");
}
