//! Model-checked protocols of pgmill, and the trace check that ties them to recorded runs.
//!
//! Each module models one protocol of the engine as a state machine checked with
//! [stateright](https://docs.rs/stateright): every interleaving of its actions within small
//! bounds is explored, and its properties are checked in every state. Each model also has
//! deliberately broken variants, each a plausible mistake in the code it stands for, for which the
//! checker must find a counterexample; a test asserts that it does, so a model that could not
//! tell the right protocol from a wrong one fails its own tests.
//!
//! | module | protocol | properties | broken variants (property they break) |
//! |---|---|---|---|
//! | [`claim`] | claim and its fencing token, completion batches (the lean statement, then the general one for what it left), late results, releases and rescues under a claim | no outcome of a superseded claim lands; running exactly while a token is set; finished stays finished; a flushed outcome of a current claim lands before the claim is forgotten | fence on the attempt number only (no superseded outcome); the lean statement trusted alone (outcome lost) |
//! | [`orphan`] | the heartbeat's orphan release and its fresh-claim margin, with a clock | no claim its producer holds or is registering is released; no superseded outcome lands | no margin; a margin one tick short of registration plus lag (no live claim released) |
//! | [`rescue`] | heartbeats and the timed rescuer; a client presumed dead that is still running | rescued within the bound; no superseded outcome lands; no client whose committed heartbeat is within the timeout is rescued | heartbeats read in an earlier statement than the rescue (no live client rescued); a rescuer on its interval alone (bound) |
//! | [`reassert`] | the re-assert after a failover, an id handed out again by the promoted replica | an outcome lands only on the job its claim ran; no superseded outcome lands | re-assert by id alone (outcome on its job) |
//! | [`leader`] | the lease with terms, renewal, resignation, takeover of a stale leader, trust windows, a restart under the same id | at most one process leads at a time; a lease ends within one lease of its own last renewal | resignation by leader id alone (one leader); renewal of any term (lease bounded) |
//! | [`periodic`] | the periodic enqueuer's tick, two enqueuers at once (leaders overlapping) | no tick enqueued twice | advance in a separate transaction from the insert (no tick twice) |
//! | [`unique`] | unique inserts racing on the unique index | one committed job per key in a unique state; a reported duplicate exists | check, then insert without the index (one job per key) |
//! | [`storage`] | a finished job's move out of the job table to the history or the dead-letter queue, the history ring's rotation by `TRUNCATE` of a slot, a snapshot held across both, a move rolled back | no job lost; no job in two tables; a truncation removes no row within its retention; a snapshot sees each job exactly once | the move as two transactions, delete first (job lost) or insert first (job in two tables); the rotation's look before the lock only (row within retention truncated) |
//!
//! Every module's docs hold a table of its actions: the SQL file each stands for (`core/sql/`)
//! and the Rust function that runs it (`core/src/`). The job row those statements share is
//! [`row`]: one function per statement, what its `WHERE` guards on for one row and what its
//! `SET` writes; the models build their database steps from it, and so does the [`trace`] check
//! of recorded runs.
//!
//! # Keeping the models tied to the code
//!
//! `models/tied_files.txt` lists every file a model stands for with its SHA-256 and the models
//! tied to it. `tests/tied_files.rs` fails when one of them changed: re-read the models it names
//! against the change, change them if the protocol changed, and record the new hash (the failure
//! prints the line to paste). It also fails when a model's docs do not name a file tied to it.
//!
//! # Adding a model
//!
//! A new protocol (the admission step of flow control and its snapshot trap, sequence order,
//! workflow promotion) is a new module of the same shape:
//!
//! 1. module docs: what is modelled, the table of actions → SQL file → Rust function, the
//!    timing assumptions, the properties and the bounds;
//! 2. a `Model` whose state is the database rows the statements touch (built from [`row`] or a
//!    row module of its own) and each process's local state, one action per statement or client
//!    step, a statement's effects applied in one step when Postgres applies them atomically, and
//!    ghost fields recording what the properties look at;
//! 3. `always` properties for what must never happen, `sometimes` properties for the scenarios the
//!    bounds must reach (so the model is not vacuous);
//! 4. a `Broken` enum with `ALL` and `violates()`, and a constructor per variant;
//! 5. tests: [`checking::assert_holds`] on the correct model, [`checking::assert_counterexample`]
//!    on every broken variant;
//! 6. its files in `tied_files.txt`, and, when its events can be recorded, a check in [`trace`].
//!
//! # Running
//!
//! ```sh
//! cargo test -p pgmill-models -- --nocapture   # prints each model's state count and counterexamples
//! ```
//!
//! The crate is compiled at `opt-level = 3` in test builds (the workspace's profile says so): the
//! largest model, [`leader`], explores about five million states.

pub mod checking;
pub mod claim;
pub mod leader;
pub mod orphan;
pub mod periodic;
pub mod reassert;
pub mod rescue;
pub mod row;
pub mod storage;
pub mod trace;
pub mod unique;
