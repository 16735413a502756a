//! The job row as the claim, outcome, rescue, release, re-assert, cancel, retry and redrive
//! statements see it, and one function per statement: what the statement's `WHERE` clause guards
//! on for one row, what its `SET` writes, and which table the row is in afterwards.
//!
//! A job is in one of three tables ([`Table`]): the job table while it can still run, the history
//! (`pgmill_job_done`) once completed or cancelled, the dead-letter queue (`pgmill_job_dead`) once
//! discarded. A statement that finishes a job moves it in the same statement (the row is locked,
//! written to its new table and deleted from the job table), unless its unique key stays taken in
//! its final state ([`KeptIn`]): then it stays, finished, in the job table, where the unique index
//! sees it. So a row's [`Row::table`] is decided by the statement that writes it, and every
//! statement of the engine but retry and redrive reads the job table only: a row elsewhere matches
//! none of them.
//!
//! The models build their database transitions from these functions, and the trace check
//! ([`crate::trace`]) replays recorded row changes through the same functions, so the model and
//! the check of real runs cannot disagree about what a statement does to a row. Each function
//! names its SQL file; `tied_files.txt` holds the hashes of those files.
//!
//! What is left out of the row: the queue, priority and `scheduled_at` (they order claims but
//! guard no transition of one job), the errors (the trace reads the reason of a rescue or release
//! from them), the metadata (cancellation of a running job, periodic statistics, redrive counts),
//! `finalized_at` and the history slot (the history's retention is [`crate::storage`]'s).

/// A job's state (`pgmill_job_state`), less `pending`, which no modelled statement touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobState {
    /// Due, claimable.
    Available,
    /// Due later.
    Scheduled,
    /// Failed, due again later.
    Retryable,
    /// Claimed: running or buffered by the client that claimed it.
    Running,
    /// Finished: completed.
    Completed,
    /// Finished: out of attempts, or discarded by its worker.
    Discarded,
    /// Finished: cancelled.
    Cancelled,
}

impl JobState {
    /// The state as the database spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Available => "available",
            JobState::Scheduled => "scheduled",
            JobState::Retryable => "retryable",
            JobState::Running => "running",
            JobState::Completed => "completed",
            JobState::Discarded => "discarded",
            JobState::Cancelled => "cancelled",
        }
    }

    /// The state named `s`, if it is one of the modelled ones.
    pub fn parse(s: &str) -> Option<JobState> {
        Some(match s {
            "available" => JobState::Available,
            "scheduled" => JobState::Scheduled,
            "retryable" => JobState::Retryable,
            "running" => JobState::Running,
            "completed" => JobState::Completed,
            "discarded" => JobState::Discarded,
            "cancelled" => JobState::Cancelled,
            _ => return None,
        })
    }

    /// Completed, discarded or cancelled: no statement of the engine moves the job again.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Discarded | JobState::Cancelled
        )
    }
}

/// Where a job row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// `pgmill_job`: every job that can still run, and a finished unique job whose key its final
    /// state keeps taken.
    Job,
    /// `pgmill_job_done`, the history: completed and cancelled jobs.
    Done,
    /// `pgmill_job_dead`, the dead-letter queue: discarded jobs.
    Dead,
}

impl Table {
    /// The table's name, less the schema.
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Job => "pgmill_job",
            Table::Done => "pgmill_job_done",
            Table::Dead => "pgmill_job_dead",
        }
    }

    /// The table named `s` (a partition of the history is the history).
    pub fn parse(s: &str) -> Option<Table> {
        match s {
            "pgmill_job" => Some(Table::Job),
            "pgmill_job_dead" => Some(Table::Dead),
            _ if s.starts_with("pgmill_job_done") => Some(Table::Done),
            _ => None,
        }
    }
}

/// The finished states a unique job's key stays taken in: the finished states among its
/// `unique_states`. Every unfinished state is among them (`UniqueOpts` refuses unique states
/// that leave one out), so a unique job holds its key while it can run, and after it finished
/// exactly when its final state is kept here. The default unique states keep `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct KeptIn(u8);

impl KeptIn {
    /// No finished state: the key is free once the job finished.
    pub const NONE: KeptIn = KeptIn(0);
    /// `completed` only, as the default unique states say.
    pub const COMPLETED: KeptIn = KeptIn(1);

    fn bit(s: JobState) -> u8 {
        match s {
            JobState::Completed => 1,
            JobState::Cancelled => 2,
            JobState::Discarded => 4,
            _ => 0,
        }
    }

    /// These states and `s` (a finished state; others are kept anyway).
    pub fn with(self, s: JobState) -> KeptIn {
        KeptIn(self.0 | Self::bit(s))
    }

    /// Whether the key stays taken in the finished state `s`.
    pub fn contains(self, s: JobState) -> bool {
        self.0 & Self::bit(s) != 0
    }
}

/// What a worker's attempt ended with, as the completer sends it (`$3` of
/// `job_set_state_if_running_many.sql`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// `Ok`: completed.
    Complete,
    /// An error with attempts left: retryable (or available at once when due soon; the model
    /// takes retryable), discarded when the attempts are used up.
    Retry,
    /// An error with attempts left and a retry due within the completer's `available_within`:
    /// available at once (it still waits for its time), attempt kept.
    RetryDueSoon,
    /// A hard stop interrupted the work, or a buffered job was given back: available, attempt
    /// given back.
    Interrupt,
    /// The worker snoozed: scheduled, attempt given back.
    Snooze,
    /// The worker snoozed for less than `available_within`: available, attempt given back (as
    /// an interrupt).
    SnoozeDueSoon,
    /// The worker discarded the job.
    Discard,
    /// The worker cancelled the job.
    Cancel,
}

impl Outcome {
    /// Every outcome.
    pub const ALL: [Outcome; 8] = [
        Outcome::Complete,
        Outcome::Retry,
        Outcome::RetryDueSoon,
        Outcome::Interrupt,
        Outcome::Snooze,
        Outcome::SnoozeDueSoon,
        Outcome::Discard,
        Outcome::Cancel,
    ];
}

/// Which columns an outcome is fenced on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fence {
    /// The claim's attempt and fencing token, as the engine fences.
    AttemptAndToken,
    /// The attempt number only, as schema version 1 fenced: a broken fence, since a claim given
    /// back returns its attempt number and the next claim reuses it.
    AttemptOnly,
}

/// One job row, reduced to the columns the modelled statements guard on or write.
///
/// `C` names a client (`attempted_by`'s last element), `T` a point of the database clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Row<C, T> {
    /// `state`.
    pub state: JobState,
    /// `attempt`.
    pub attempt: i32,
    /// `max_attempts`.
    pub max_attempts: i32,
    /// `claim_token`: set by a claim, cleared by whatever ends or gives back the claim.
    pub token: Option<i64>,
    /// The current attempter, `attempted_by[cardinality(attempted_by)]`.
    pub owner: Option<C>,
    /// `attempted_at`, the claim's `now()`.
    pub attempted_at: Option<T>,
    /// `created_at`: with the id, what tells a job apart from a later job given the same id by
    /// a promoted replica.
    pub created_at: T,
    /// The table the row is in.
    pub table: Table,
    /// For a unique job (`unique_key` and `unique_states` set), the finished states its key stays
    /// taken in; `None` for a job without a unique key.
    pub unique: Option<KeptIn>,
}

impl<C: Copy + PartialEq, T: Copy + PartialEq + PartialOrd> Row<C, T> {
    /// A job as inserted, due now.
    pub fn inserted(created_at: T, max_attempts: i32) -> Self {
        Row {
            state: JobState::Available,
            attempt: 0,
            max_attempts,
            token: None,
            owner: None,
            attempted_at: None,
            created_at,
            table: Table::Job,
            unique: None,
        }
    }

    /// The same job with a unique key, kept taken in the finished states `kept`.
    pub fn with_unique(self, kept: KeptIn) -> Self {
        Row {
            unique: Some(kept),
            ..self
        }
    }

    /// Whether the row holds its unique key, wherever it is: a unique job while it can run, and
    /// once finished in a state its key stays taken in. Only a row of the job table holding it is
    /// seen by the unique index.
    pub fn holds_key(&self) -> bool {
        self.unique
            .is_some_and(|kept| !self.state.is_final() || kept.contains(self.state))
    }

    /// Where a statement that wrote `state` leaves the row: a finished job leaves the job table
    /// (completed and cancelled ones for the history, discarded ones for the dead-letter queue)
    /// unless its unique key stays taken in that state.
    fn placed(self) -> Self {
        let keeps_key = self.unique.is_some_and(|kept| kept.contains(self.state));
        let table = match self.state {
            JobState::Completed | JobState::Cancelled if !keeps_key => Table::Done,
            JobState::Discarded if !keeps_key => Table::Dead,
            _ => Table::Job,
        };
        Row { table, ..self }
    }

    fn in_job_table(&self) -> bool {
        self.table == Table::Job
    }

    /// `job_get_available.sql` (and `job_get_available_after.sql`, `job_get_available_between.sql`,
    /// which differ in where the scan starts and stops), for one row the claim's
    /// `SELECT ... FOR UPDATE SKIP LOCKED` picked: only an available row; it becomes running
    /// under `client`, its attempt counted, stamped with the claim's `now()` and its token.
    pub fn claim(&self, client: C, token: i64, now: T) -> Option<Self> {
        (self.in_job_table() && self.state == JobState::Available).then_some(Row {
            state: JobState::Running,
            attempt: self.attempt + 1,
            token: Some(token),
            owner: Some(client),
            attempted_at: Some(now),
            ..*self
        })
    }

    /// `job_set_state_if_running_many.sql` for one outcome: only while the row is running the
    /// claim the outcome belongs to (`attempt` and `token`, or the attempt alone under the broken
    /// [`Fence::AttemptOnly`]). Clears the token. A job it finishes leaves the job table in the
    /// same statement, unless its key stays taken in its final state.
    pub fn set_state_if_running(
        &self,
        attempt: i32,
        token: i64,
        outcome: Outcome,
        fence: Fence,
    ) -> Option<Self> {
        let fenced = self.in_job_table()
            && self.state == JobState::Running
            && self.attempt == attempt
            && (fence == Fence::AttemptOnly || self.token == Some(token));
        if !fenced {
            return None;
        }
        let (state, attempt) = match outcome {
            Outcome::Complete => (JobState::Completed, self.attempt),
            Outcome::Cancel => (JobState::Cancelled, self.attempt),
            Outcome::Discard => (JobState::Discarded, self.attempt),
            Outcome::Retry | Outcome::RetryDueSoon if self.attempt >= self.max_attempts => {
                (JobState::Discarded, self.attempt)
            }
            Outcome::Retry => (JobState::Retryable, self.attempt),
            Outcome::RetryDueSoon => (JobState::Available, self.attempt),
            Outcome::Snooze => (JobState::Scheduled, self.attempt - 1),
            Outcome::Interrupt | Outcome::SnoozeDueSoon => (JobState::Available, self.attempt - 1),
        };
        Some(
            Row {
                state,
                attempt,
                token: None,
                ..*self
            }
            .placed(),
        )
    }

    /// `job_set_completed_many.sql` (and `_count`): the lean completion, fenced on the token
    /// alone (a row carries a claim's token only at that claim's attempt). Under the broken
    /// [`Fence::AttemptOnly`] it compares the attempt instead, as schema version 1 did. The job
    /// moves to the history in the same statement; a unique job whose key stays taken when
    /// completed is left running (the completer records it with
    /// [`Row::set_state_if_running`]).
    pub fn set_completed(&self, attempt: i32, token: i64, fence: Fence) -> Option<Self> {
        let fenced = self.in_job_table()
            && self.state == JobState::Running
            && !self
                .unique
                .is_some_and(|kept| kept.contains(JobState::Completed))
            && match fence {
                Fence::AttemptAndToken => self.token == Some(token),
                Fence::AttemptOnly => self.attempt == attempt,
            };
        fenced.then(|| {
            Row {
                state: JobState::Completed,
                token: None,
                ..*self
            }
            .placed()
        })
    }

    /// `job_rescue.sql` for one row its `stuck` CTE picked (the caller decides the client is dead
    /// or the deadline passed): available again, or discarded when out of attempts (and then
    /// moved to the dead-letter queue, unless its key stays taken when discarded); the attempt
    /// is kept (it was used) and the token cleared.
    pub fn rescue(&self) -> Option<Self> {
        (self.in_job_table() && self.state == JobState::Running).then(|| {
            Row {
                state: if self.attempt >= self.max_attempts {
                    JobState::Discarded
                } else {
                    JobState::Available
                },
                token: None,
                ..*self
            }
            .placed()
        })
    }

    /// `job_release_orphaned.sql` for one row: only a running row attributed to `client` whose
    /// token is not among the claims the client holds (`held` says whether it holds one), and
    /// whose claim is older than the margin (`old_enough`, the caller's reading of
    /// `attempted_at < now() - margin`). Available again, attempt given back, token cleared.
    pub fn release_orphaned(
        &self,
        client: C,
        held: impl Fn(i64) -> bool,
        old_enough: bool,
    ) -> Option<Self> {
        let orphan = self.in_job_table()
            && self.state == JobState::Running
            && self.owner == Some(client)
            && !self.token.is_some_and(held)
            && old_enough;
        orphan.then_some(Row {
            state: JobState::Available,
            attempt: (self.attempt - 1).max(0),
            token: None,
            ..*self
        })
    }

    /// `job_reassert_running.sql` for one claim the client holds (`attempt`, `token`,
    /// `attempted_at` and the job's `created_at` as the claim returned them): only a row created
    /// when the claimed job was (unless `check_created` is false, the broken re-assert that
    /// trusts the id alone), available, at the attempt before the claim, and not showing the
    /// claim's start time. Running again under `client` with the claim's attempt, token and
    /// start time.
    pub fn reassert(&self, client: C, claim: HeldClaim<T>, check_created: bool) -> Option<Self> {
        let lost = self.in_job_table()
            && (!check_created || self.created_at == claim.created_at)
            && self.state == JobState::Available
            && self.attempt == claim.attempt - 1
            && self.attempted_at != Some(claim.attempted_at);
        lost.then_some(Row {
            state: JobState::Running,
            attempt: claim.attempt,
            token: Some(claim.token),
            owner: Some(client),
            attempted_at: Some(claim.attempted_at),
            ..*self
        })
    }

    /// `job_schedule.sql` for one due row: scheduled and retryable rows become available.
    pub fn schedule(&self) -> Option<Self> {
        (self.in_job_table() && matches!(self.state, JobState::Scheduled | JobState::Retryable))
            .then_some(Row {
                state: JobState::Available,
                ..*self
            })
    }

    /// `job_cancel.sql` (and `job_bulk.sql`'s cancel) for a job that is not running: cancelled at
    /// once, and moved to the history unless its key stays taken when cancelled. (A running job
    /// is only marked, and its outcome ends it cancelled: not modelled.)
    pub fn cancel(&self) -> Option<Self> {
        let cancellable =
            self.in_job_table() && !self.state.is_final() && self.state != JobState::Running;
        cancellable.then(|| {
            Row {
                state: JobState::Cancelled,
                ..*self
            }
            .placed()
        })
    }

    /// `job_retry.sql` (and `job_bulk.sql`'s retry) for a job that is not running, wherever it
    /// is: available in the job table under its own id, one more attempt allowed if it used them
    /// up; a finished job moves back from the history or the dead-letter queue in the same
    /// statement. The unique index may refuse the row (another job holds the key now): the
    /// statement then fails and nothing changes, which the caller decides (it holds the index).
    pub fn retry(&self) -> Option<Self> {
        (self.state != JobState::Running).then_some(Row {
            state: JobState::Available,
            max_attempts: if self.attempt >= self.max_attempts {
                self.attempt + 1
            } else {
                self.max_attempts
            },
            table: Table::Job,
            ..*self
        })
    }

    /// `job_dead_redrive.sql` for one job of the dead-letter queue: back into the job table
    /// under its own id, available, with one more attempt than it used. Its insert is
    /// `ON CONFLICT DO NOTHING`: when the unique index refuses it (the caller decides), the job
    /// stays in the dead-letter queue, deleted from there only once written to the job table.
    pub fn redrive(&self) -> Option<Self> {
        (self.table == Table::Dead).then_some(Row {
            state: JobState::Available,
            max_attempts: self.attempt + 1,
            table: Table::Job,
            ..*self
        })
    }
}

/// A claim as the client holds it (`HeldClaim` in `core/src/work/in_flight.rs`): what the claim
/// statement returned for one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HeldClaim<T> {
    /// The attempt the claim made.
    pub attempt: i32,
    /// The claim's fencing token.
    pub token: i64,
    /// The claim's `now()`.
    pub attempted_at: T,
    /// The job's `created_at`.
    pub created_at: T,
}
