//! Queue statistics over time: what the leader's rollup recorded per bucket, read back in bins
//! for charts ([`Client::queue_stats`](crate::Client::queue_stats)).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::ident::validate_name;
use crate::job::JobState;

/// Most bins one read of queue statistics returns.
pub const MAX_QUEUE_STAT_BINS: u64 = 1_500;

/// What to read of the queue statistics: one queue or all queues together, over the last
/// window, in bins of a width.
///
/// # Examples
///
/// ```
/// use pgmill::admin::QueueStatParams;
///
/// let hour = QueueStatParams::last_hour(); // all queues, 60 bins of a minute
/// let day = QueueStatParams::last_day().queue("emails")?; // one queue, 96 bins of 15 minutes
/// assert_eq!(day.bins(), 97); // the bin holding the window's start is included
/// # let _ = hour;
/// # Ok::<(), pgmill::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStatParams {
    queue: Option<String>,
    window: Duration,
    bin: Duration,
}

impl QueueStatParams {
    /// All queues over the last hour, in bins of a minute.
    pub fn last_hour() -> Self {
        QueueStatParams {
            queue: None,
            window: Duration::from_secs(3600),
            bin: Duration::from_secs(60),
        }
    }

    /// All queues over the last day, in bins of 15 minutes.
    pub fn last_day() -> Self {
        QueueStatParams {
            queue: None,
            window: Duration::from_secs(24 * 3600),
            bin: Duration::from_secs(15 * 60),
        }
    }

    /// All queues over the last `window`, in bins of `bin`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] when `bin` is under a second or not a whole number of seconds,
    /// `window` is shorter than `bin`, or the window holds more than [`MAX_QUEUE_STAT_BINS`] bins.
    pub fn new(window: Duration, bin: Duration) -> Result<Self> {
        if bin < Duration::from_secs(1) || bin.subsec_nanos() != 0 {
            return Err(Error::InvalidConfig(format!(
                "queue statistics bins must be whole seconds, at least one; got {bin:?}"
            )));
        }
        if window < bin {
            return Err(Error::InvalidConfig(format!(
                "queue statistics window {window:?} is shorter than its bin {bin:?}"
            )));
        }
        if window.as_secs() / bin.as_secs() >= MAX_QUEUE_STAT_BINS {
            return Err(Error::InvalidConfig(format!(
                "queue statistics window {window:?} holds more than {MAX_QUEUE_STAT_BINS} bins of \
                 {bin:?}"
            )));
        }
        Ok(QueueStatParams {
            queue: None,
            window,
            bin,
        })
    }

    /// Only this queue (by default all queues together).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] for a name no queue can have.
    pub fn queue(mut self, queue: impl Into<String>) -> Result<Self> {
        let queue = queue.into();
        validate_name("queue", &queue)?;
        self.queue = Some(queue);
        Ok(self)
    }

    /// The queue read, `None` for all queues together.
    pub fn queue_name(&self) -> Option<&str> {
        self.queue.as_deref()
    }

    /// The window read, ending now (database clock).
    pub fn window(&self) -> Duration {
        self.window
    }

    /// The width of a bin.
    pub fn bin(&self) -> Duration {
        self.bin
    }

    /// How many bins a read returns: those from the one holding the window's start to the one
    /// holding now.
    pub fn bins(&self) -> u64 {
        self.window.as_secs() / self.bin.as_secs() + 1
    }
}

/// Queue statistics over a window: one point per bin, oldest first, every bin present
/// ([`Client::queue_stats`](crate::Client::queue_stats)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueueStats {
    /// The queue, `None` for all queues together.
    pub queue: Option<String>,
    /// The database's clock when read: the window ends here.
    pub now: DateTime<Utc>,
    /// The width of a bin.
    pub bin: Duration,
    /// One point per bin, oldest first.
    pub points: Vec<QueueStatPoint>,
}

/// One bin of [`QueueStats`].
///
/// The leader writes the statistics of a bucket (a minute by default) once it has ended and its
/// settle time has passed ([`QueueStatConfig`](crate::maintenance::QueueStatConfig)); a bin holds
/// the buckets starting in it. Counts are by when things happened: outcomes by `finalized_at`,
/// retries by their error's time, pickups by `attempted_at`. Depth and wait are samples, placed in
/// the bin in which they were taken.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueueStatPoint {
    /// The bin's start.
    pub at: DateTime<Utc>,
    /// True when statistics were written for it. False for a gap: the bin has not ended yet (or
    /// not longer than the settle time ago), no leader ran the rollup then, or it is older than
    /// the retention. Counts of a gap are zero because nothing was recorded, not because nothing
    /// happened.
    pub covered: bool,
    /// Jobs completed.
    pub completed: i64,
    /// Jobs discarded (attempts used up, or discarded by their worker).
    pub discarded: i64,
    /// Jobs cancelled.
    pub cancelled: i64,
    /// Attempts that failed and run again (retries, and jobs rescued from dead clients).
    pub retried: i64,
    /// Attempts claimed whose wait was measured.
    pub pickup_count: i64,
    /// The 95th percentile of those attempts' wait from their scheduled time to their claim
    /// (the largest bucket's percentile when the bin holds several buckets); `None` without one.
    pub pickup_p95: Option<Duration>,
    /// Samples of depth and wait taken in the bin; 0 leaves `depth` and `oldest_available`
    /// `None`.
    pub samples: i64,
    /// Live jobs by state: per state the largest count sampled in the bin (states with none are
    /// absent).
    pub depth: Option<BTreeMap<JobState, i64>>,
    /// The longest any due available job had waited, among the bin's samples.
    pub oldest_available: Option<Duration>,
}

impl QueueStatPoint {
    /// Failures: discarded jobs and retried attempts.
    pub fn failed(&self) -> i64 {
        self.discarded + self.retried
    }

    /// Live jobs in `state` (0 when not sampled or none).
    pub fn depth_of(&self, state: JobState) -> i64 {
        self.depth
            .as_ref()
            .and_then(|d| d.get(&state).copied())
            .unwrap_or(0)
    }
}
