//! The pgmill driver conformance suite, run against the diesel driver, plus the diesel-specific
//! behaviours the suite cannot reach (blocking transactions, cancelled calls).

use diesel::connection::CacheSize;
use diesel::{Connection, PgConnection};
use pgmill_driver_diesel::{DieselDriver, PgConnectionExt};
use pgmill_drivertest::{HostDone, HostWork, harness_error};

struct Harness;

/// The error of the host transaction's closure: diesel's, pgmill's, or "roll back".
#[derive(Debug)]
enum HostError {
    Diesel(diesel::result::Error),
    Pgmill(pgmill::Error),
    RollBack,
}

impl From<diesel::result::Error> for HostError {
    fn from(e: diesel::result::Error) -> Self {
        HostError::Diesel(e)
    }
}

impl From<pgmill::Error> for HostError {
    fn from(e: pgmill::Error) -> Self {
        HostError::Pgmill(e)
    }
}

impl pgmill_drivertest::Harness for Harness {
    type Driver = DieselDriver;

    // diesel 2.3 exposes no SQLSTATE beyond its error kinds, and no type for NULL fields.
    const REPORTS_EVERY_SQLSTATE: bool = false;
    const TYPES_NULL_COLUMNS: bool = false;

    async fn connect(url: &str, max_connections: u32) -> pgmill::Result<DieselDriver> {
        DieselDriver::connect(url, max_connections).await
    }

    async fn run_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
        host_transaction(url, work, CacheSize::Unbounded).await
    }
}

/// Runs `work` in `conn.transaction(..)` on a new connection whose statement cache is `cache`
/// (disabled behind a transaction-mode pooler, as for diesel's own queries).
async fn host_transaction(url: &str, work: HostWork, cache: CacheSize) -> pgmill::Result<HostDone> {
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || host_transaction_blocking(&url, &work, cache))
        .await
        .map_err(harness_error)?
}

/// Runs `work` in `conn.transaction(..)`, then commits or rolls back.
fn host_transaction_blocking(
    url: &str,
    work: &HostWork,
    cache: CacheSize,
) -> pgmill::Result<HostDone> {
    let mut conn = PgConnection::establish(url).map_err(harness_error)?;
    conn.set_prepared_statement_cache_size(cache);
    let mut done = HostDone::default();
    let outcome = conn.transaction(|conn| {
        done = pgmill_drivertest::run_host_work!(blocking conn, work);
        if work.commit {
            Ok(())
        } else {
            Err(HostError::RollBack)
        }
    });
    match outcome {
        Ok(()) | Err(HostError::RollBack) => Ok(done),
        Err(HostError::Pgmill(e)) => Err(e),
        Err(HostError::Diesel(e)) => Err(harness_error(e)),
    }
}

pgmill_drivertest::conformance_suite!(Harness);

/// The engine behind a transaction-mode PgBouncer.
mod through_pgbouncer {
    use diesel::connection::CacheSize;
    use pgmill_driver_diesel::DieselDriver;
    use pgmill_drivertest::{HostDone, HostWork};

    struct Harness;

    impl pgmill_drivertest::Harness for Harness {
        type Driver = DieselDriver;
        const REPORTS_EVERY_SQLSTATE: bool = false;
        const TYPES_NULL_COLUMNS: bool = false;

        fn url() -> String {
            pgmill_drivertest::pgbouncer_url()
        }

        async fn connect(url: &str, max_connections: u32) -> pgmill::Result<DieselDriver> {
            DieselDriver::connect(url, max_connections)
                .await?
                .unnamed_statements()
                .with_listener_url(&pgmill_drivertest::testdb::url())
        }

        async fn run_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
            super::host_transaction(url, work, CacheSize::Disabled).await
        }
    }

    pgmill_drivertest::pooler_suite!(Harness);

    /// Through the pooler with no listener at all: the client works in poll-only mode.
    mod poll_only {
        use pgmill_drivertest::{HostDone, HostWork, PollOnly};

        struct Harness;

        impl pgmill_drivertest::Harness for Harness {
            type Driver = PollOnly<super::DieselDriver>;
            const REPORTS_EVERY_SQLSTATE: bool = false;
            const TYPES_NULL_COLUMNS: bool = false;

            fn url() -> String {
                pgmill_drivertest::pgbouncer_url()
            }

            async fn connect(url: &str, max_connections: u32) -> pgmill::Result<Self::Driver> {
                Ok(PollOnly::new(
                    super::DieselDriver::connect(url, max_connections)
                        .await?
                        .unnamed_statements(),
                ))
            }

            async fn run_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
                super::super::host_transaction(url, work, super::CacheSize::Disabled).await
            }
        }

        pgmill_drivertest::pooler_poll_only_suite!(Harness);
    }
}

/// Behaviours of this driver beyond the shared suite.
mod diesel_driver {
    use std::time::Duration;

    use diesel::connection::CacheSize;
    use diesel::{Connection, PgConnection};
    use pgmill::driver::{
        BlockingExecutor, BlockingTransaction, Driver, Executor, Statement, Transaction, Value,
    };
    use pgmill_driver_diesel::{DieselDriver, PgConnectionExt};
    use pgmill_drivertest::TestContext;

    use super::Harness;

    async fn with_table() -> TestContext<DieselDriver> {
        let ctx = TestContext::<DieselDriver>::new::<Harness>().await;
        ctx.script(
            &ctx.schema
                .render("CREATE TABLE {schema}.t (n int NOT NULL)"),
        )
        .await;
        ctx
    }

    async fn values(ctx: &TestContext<DieselDriver>) -> Vec<i64> {
        let rows = ctx
            .conn()
            .await
            .query(&ctx.stmt("SELECT n::bigint AS n FROM {schema}.t ORDER BY n"))
            .await
            .expect("select");
        rows.iter().map(|r| r.get("n").unwrap()).collect()
    }

    fn blocking<R: Send + 'static>(
        f: impl FnOnce() -> R + Send + 'static,
    ) -> tokio::task::JoinHandle<R> {
        tokio::task::spawn_blocking(f)
    }

    /// The pool built by `connect` hands out the connection returned last (LIFO), so a few
    /// callers at a time keep to the same few server backends instead of rotating through all.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connect_builds_a_pool_that_hands_out_the_connection_returned_last() {
        let driver = DieselDriver::connect(&pgmill_drivertest::testdb::url(), 4)
            .await
            .unwrap();
        async fn pid_of(object: &deadpool_diesel::postgres::Object) -> i32 {
            object
                .interact(|conn| {
                    conn.pgmill()
                        .query_scalar::<i32>(&Statement::new("SELECT pg_backend_pid() AS pid"))
                })
                .await
                .expect("interact")
                .expect("pid")
        }
        let first = driver.pool().get().await.expect("first checkout");
        let second = driver.pool().get().await.expect("second checkout");
        let (first_pid, second_pid) = (pid_of(&first).await, pid_of(&second).await);
        assert_ne!(first_pid, second_pid, "two connections at once");
        // Returned in this order, the second is the one returned last.
        drop(first);
        drop(second);
        let next = driver.pool().get().await.expect("next checkout");
        assert_eq!(
            pid_of(&next).await,
            second_pid,
            "the connection returned last comes first"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocking_transaction_dropped_without_commit_rolls_back() {
        let ctx = with_table().await;
        let (url, insert) = (
            ctx.url.clone(),
            ctx.stmt("INSERT INTO {schema}.t VALUES (1)"),
        );
        let count = ctx.stmt("SELECT count(*) AS n FROM {schema}.t");
        let n: i64 = blocking(move || {
            let mut conn = PgConnection::establish(&url).unwrap();
            {
                let mut exec = conn.pgmill();
                let mut tx = exec.begin().unwrap();
                tx.execute(&insert).unwrap();
            }
            conn.pgmill().query_scalar(&count).unwrap()
        })
        .await
        .unwrap();
        assert_eq!(n, 0);
        assert_eq!(values(&ctx).await, Vec::<i64>::new());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pgmill_savepoint_nests_in_the_apps_transaction() {
        let ctx = with_table().await;
        let url = ctx.url.clone();
        let one = ctx.stmt("INSERT INTO {schema}.t VALUES (1)");
        let two = ctx.stmt("INSERT INTO {schema}.t VALUES (2)");
        let three = ctx.stmt("INSERT INTO {schema}.t VALUES (3)");
        blocking(move || {
            let mut conn = PgConnection::establish(&url).unwrap();
            conn.transaction(|conn| {
                conn.pgmill().execute(&one)?;
                let mut exec = conn.pgmill();
                let mut sp = exec.begin()?;
                sp.execute(&two)?;
                sp.rollback()?;
                let mut exec = conn.pgmill();
                let mut sp = exec.begin()?;
                sp.execute(&three)?;
                sp.commit()?;
                Ok::<_, super::HostError>(())
            })
            .unwrap();
        })
        .await
        .unwrap();
        assert_eq!(values(&ctx).await, [1, 3]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropped_transaction_is_rolled_back_before_the_connection_returns_to_the_pool() {
        let ctx = with_table().await;
        // A pool of one: the next acquire gets the same connection.
        let driver = DieselDriver::connect(&ctx.url, 1).await.unwrap();
        let pid = Statement::new("SELECT pg_backend_pid() AS pid");
        let first_pid: i32;
        {
            let mut conn = driver.acquire().await.unwrap();
            first_pid = conn.query_scalar(&pid).await.unwrap();
            let mut tx = conn.begin().await.unwrap();
            tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (1)"))
                .await
                .unwrap();
            let mut sp = tx.begin().await.unwrap();
            sp.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (2)"))
                .await
                .unwrap();
        }
        let mut conn = tokio::time::timeout(Duration::from_secs(30), driver.acquire())
            .await
            .expect("acquire in time")
            .unwrap();
        let second_pid: i32 = conn.query_scalar(&pid).await.unwrap();
        assert_eq!(
            first_pid, second_pid,
            "the connection was reused, not replaced"
        );
        // The dropped transaction wrote, so it had a transaction id; a fresh one has none.
        let outside: bool = conn
            .query_scalar(&Statement::new(
                "SELECT pg_current_xact_id_if_assigned() IS NULL AS outside",
            ))
            .await
            .unwrap();
        assert!(outside, "the dropped transaction was rolled back");
        let mut tx = conn
            .begin()
            .await
            .expect("a fresh transaction, not a savepoint");
        tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (3)"))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(values(&ctx).await, [3]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancelled_statement_still_runs_before_the_next_one() {
        let ctx = with_table().await;
        let mut conn = ctx.conn().await;
        let slow = ctx.stmt("INSERT INTO {schema}.t SELECT 1 FROM pg_sleep(0.3)");
        // Start the statement, then give up on it: interact cannot be cancelled once started.
        let _ = tokio::time::timeout(Duration::from_millis(50), conn.execute(&slow)).await;
        let rows = conn
            .query(&ctx.stmt("SELECT count(*) AS n FROM {schema}.t"))
            .await
            .unwrap();
        assert_eq!(rows[0].values(), [Value::Int8(1)]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancelled_begin_leaves_no_transaction_open() {
        let ctx = with_table().await;
        let mut conn = ctx.conn().await;
        // Polled once, `begin` spawns its closure, then is dropped: the BEGIN still runs, and no
        // transaction handle owns it.
        let _ = tokio::time::timeout(Duration::ZERO, conn.begin()).await;
        conn.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (1)"))
            .await
            .unwrap();
        // Committed on its own, so another connection sees it.
        assert_eq!(values(&ctx).await, [1]);
        let outside: bool = conn
            .query_scalar(&Statement::new(
                "SELECT pg_current_xact_id_if_assigned() IS NULL AS outside",
            ))
            .await
            .unwrap();
        assert!(outside);
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Receipt {
        order_id: i64,
    }

    impl pgmill::JobArgs for Receipt {
        const KIND: &'static str = "receipt";
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn insert_job_follows_the_apps_transaction() {
        let ctx = TestContext::<DieselDriver>::migrated::<Harness>().await;
        let (url, inserter) = (ctx.url.clone(), pgmill::Inserter::new(ctx.schema.clone()));
        let inserted = blocking(move || {
            let mut conn = PgConnection::establish(&url).unwrap();
            let kept = conn
                .transaction::<_, super::HostError, _>(|conn| {
                    Ok(conn.insert_job(&inserter, Receipt { order_id: 1 })?)
                })
                .unwrap();
            let dropped = conn.transaction(|conn| {
                conn.insert_job(&inserter, Receipt { order_id: 2 })?;
                Err::<(), _>(super::HostError::RollBack)
            });
            assert!(matches!(dropped, Err(super::HostError::RollBack)));
            kept
        })
        .await
        .unwrap();
        assert_eq!(inserted.kind, "receipt");
        let rows = ctx
            .conn()
            .await
            .query(&ctx.stmt(
                "SELECT id AS id, (args->>'order_id')::bigint AS order_id FROM {schema}.pgmill_job_all",
            ))
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<i64>("id").unwrap(), inserted.id.0);
        assert_eq!(rows[0].get::<i64>("order_id").unwrap(), 1);
    }

    /// `Inserter::insert_bulk_blocking`, the blocking counterpart of `insert_bulk`, in the
    /// application's diesel transaction: due jobs over several statements (5,000 jobs each),
    /// scheduled jobs and unique jobs (duplicates among themselves and of a job already in the
    /// table) are inserted on commit, each once; it returns how many it inserted (not the
    /// duplicates); a listener hears of the due queue when the transaction commits; a rolled-back
    /// bulk insert leaves nothing and announces nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn insert_bulk_blocking_inserts_with_the_apps_transaction() {
        use pgmill::driver::{Listener, ListenerEvent};
        use pgmill::{InsertOpts, InsertParams, UniqueOpts};
        use pgmill_drivertest::scripted::Task;

        let ctx = TestContext::<DieselDriver>::migrated::<Harness>().await;
        let inserter = pgmill::Inserter::new(ctx.schema.clone());
        let unique = |n| {
            InsertParams::from_args(
                &Task { n },
                Some(InsertOpts::new().unique(UniqueOpts::new().by_args())),
            )
            .unwrap()
        };
        inserter
            .insert_many(&mut ctx.conn().await, &[unique(1_000_001)])
            .await
            .unwrap();
        let mut listener = ctx.driver.listener().await.unwrap();
        let (inserts, marker) = (
            ctx.schema.channel("pgmill_insert"),
            ctx.schema.channel("marker"),
        );
        listener.listen(&inserts).await.unwrap();
        listener.listen(&marker).await.unwrap();

        let mut params: Vec<InsertParams> = (0..12_000)
            .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
            .collect();
        let later = InsertOpts::new().schedule_in(chrono::TimeDelta::hours(1));
        params.extend(
            (20_000..20_010)
                .map(|n| InsertParams::from_args(&Task { n }, Some(later.clone())).unwrap()),
        );
        params.extend(
            [1_000_001, 1_000_002, 1_000_002, 1_000_003, 1_000_001]
                .into_iter()
                .map(unique),
        );
        let rolled_back: Vec<InsertParams> = (30_000..30_100)
            .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
            .collect();
        let (url, bulk) = (ctx.url.clone(), inserter.clone());
        let (inserted, rolled) = blocking(move || {
            let mut conn = PgConnection::establish(&url).unwrap();
            let inserted = conn
                .transaction::<_, super::HostError, _>(|conn| {
                    Ok(bulk.insert_bulk_blocking(&mut conn.pgmill(), &params)?)
                })
                .unwrap();
            let rolled = conn.transaction(|conn| {
                bulk.insert_bulk_blocking(&mut conn.pgmill(), &rolled_back)?;
                Err::<(), _>(super::HostError::RollBack)
            });
            (inserted, rolled)
        })
        .await
        .unwrap();
        assert!(matches!(rolled, Err(super::HostError::RollBack)));
        assert_eq!(
            inserted,
            12_000 + 10 + 2,
            "every due and scheduled job, and the unique jobs without a duplicate"
        );

        let rows = ctx
            .conn()
            .await
            .query(&ctx.stmt(
                "SELECT state::text AS state, count(*) AS jobs, \
                        count(DISTINCT (args->>'n')::bigint) AS distinct_n \
                 FROM {schema}.pgmill_job_all GROUP BY state ORDER BY state",
            ))
            .await
            .unwrap();
        let by_state: Vec<(String, i64, i64)> = rows
            .iter()
            .map(|r| {
                (
                    r.get("state").unwrap(),
                    r.get("jobs").unwrap(),
                    r.get("distinct_n").unwrap(),
                )
            })
            .collect();
        assert_eq!(
            by_state,
            [
                ("available".to_owned(), 12_003, 12_003),
                ("scheduled".to_owned(), 10, 10)
            ],
            "each job once, nothing of the rolled-back insert"
        );

        // The committed insert announced the due queue; the rolled-back one nothing.
        ctx.conn()
            .await
            .execute(&Statement::new("SELECT pg_notify($1::text, 'end') AS sent").bind(marker))
            .await
            .unwrap();
        let mut payloads = Vec::new();
        loop {
            let event = tokio::time::timeout(Duration::from_secs(20), listener.next_event())
                .await
                .expect("the marker arrives")
                .unwrap();
            match event {
                ListenerEvent::Notification(n) if n.channel == inserts => payloads.push(n.payload),
                ListenerEvent::Notification(_) => break,
                other => panic!("not a notification: {other:?}"),
            }
        }
        assert_eq!(payloads, ["default"], "one notification, at the commit");
    }

    /// A worker that completes its job in its own diesel transaction with
    /// `Job::complete_in_blocking` (the blocking counterpart of `complete_in`), beside a row of
    /// its own, as `n` says: committed (0, 2, 4), rolled back (1), committed and then failing (3),
    /// or after the attempt moved on inside the transaction (5).
    struct BlockingCompletion {
        url: String,
        table: String,
        returned: std::sync::Arc<std::sync::Mutex<Vec<(i64, bool)>>>,
    }

    impl pgmill::Worker<pgmill_drivertest::scripted::Task> for BlockingCompletion {
        async fn work(
            &self,
            job: &pgmill::Job<pgmill_drivertest::scripted::Task>,
        ) -> Result<(), pgmill::JobError> {
            let n = job.args.n;
            let outcome = tokio::task::block_in_place(|| {
                let mut conn =
                    PgConnection::establish(&self.url).map_err(pgmill::JobError::retry)?;
                conn.transaction(|conn| {
                    conn.pgmill().execute(
                        &Statement::new(format!("INSERT INTO {} VALUES ($1::bigint)", self.table))
                            .bind(n),
                    )?;
                    if n == 5 {
                        // The attempt is no longer the job's: nothing to complete.
                        conn.pgmill().execute(
                            &Statement::new(format!(
                                "UPDATE {} SET attempt = attempt + 1 WHERE id = $1::bigint",
                                self.table.replace(".side", ".pgmill_job")
                            ))
                            .bind(job.id().0),
                        )?;
                    }
                    let done = job.complete_in_blocking(&mut conn.pgmill())?;
                    self.returned.lock().unwrap().push((n, done));
                    if n == 1 || n == 5 {
                        Err(super::HostError::RollBack)
                    } else {
                        Ok(())
                    }
                })
                .or_else(|e| match e {
                    super::HostError::RollBack => Ok(()),
                    other => Err(pgmill::JobError::retry(format!("{other:?}"))),
                })
            });
            outcome?;
            match n {
                1 => Err(pgmill::JobError::discard("rolled back")),
                3 => Err(pgmill::JobError::discard(
                    "failing after the commit changes nothing",
                )),
                _ => Ok(()),
            }
        }
    }

    /// `Job::complete_in_blocking` completes the job exactly when the worker's diesel
    /// transaction commits: committed, the job is completed with the worker's row and the engine
    /// records nothing more (not even the worker's later failure, which it finds superseded);
    /// rolled back, neither the row nor the completion remain and the engine records the worker's
    /// outcome; when the attempt is no longer the job's, it returns false and changes nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn complete_in_blocking_completes_with_the_workers_transaction() {
        use pgmill::JobState;
        use pgmill_drivertest::scripted::{Task, count_in, test_client, wait_for};

        let ctx = TestContext::<DieselDriver>::migrated::<Harness>().await;
        ctx.script(
            &ctx.schema
                .render("CREATE TABLE {schema}.side (n bigint PRIMARY KEY)"),
        )
        .await;
        let returned = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let client = test_client(&ctx)
            .queue("default", 2)
            .worker(BlockingCompletion {
                url: ctx.url.clone(),
                table: ctx.schema.render("{schema}.side"),
                returned: std::sync::Arc::clone(&returned),
            })
            .build()
            .unwrap();
        client.start().await.unwrap();
        for n in 0..6 {
            client.insert(Task { n }).await.unwrap();
        }
        wait_for("every job finished", async || {
            count_in(&ctx, JobState::Completed).await + count_in(&ctx, JobState::Discarded).await
                == 6
        })
        .await;
        client.stop().await;
        let mut returned = returned.lock().unwrap().clone();
        returned.sort_unstable();
        assert_eq!(
            returned,
            [
                (0, true),
                (1, true),
                (2, true),
                (3, true),
                (4, true),
                (5, false)
            ]
        );
        let side: Vec<i64> = ctx
            .conn()
            .await
            .query(&ctx.stmt("SELECT n FROM {schema}.side ORDER BY n"))
            .await
            .unwrap()
            .iter()
            .map(|r| r.get("n").unwrap())
            .collect();
        assert_eq!(side, [0, 2, 3, 4], "the committed transactions' rows");
        let discarded: Vec<i64> = ctx
            .conn()
            .await
            .query(&ctx.stmt(
                "SELECT (args->>'n')::bigint AS n FROM {schema}.pgmill_job_all \
                 WHERE state = 'discarded'",
            ))
            .await
            .unwrap()
            .iter()
            .map(|r| r.get("n").unwrap())
            .collect();
        assert_eq!(
            discarded,
            [1],
            "only the job whose completion rolled back ends with the worker's failure"
        );
        assert_eq!(
            client.stats().superseded_results,
            1,
            "only job 3's failure, after its completion committed, was superseded"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nulls_take_their_type_from_other_rows() {
        let ctx = TestContext::<DieselDriver>::new::<Harness>().await;
        let rows = ctx
            .conn()
            .await
            .query(&Statement::new(
                "SELECT v::bigint AS v FROM (VALUES (NULL), (1)) AS x(v)",
            ))
            .await
            .unwrap();
        assert_eq!(
            rows[0].values(),
            [Value::Null(pgmill::driver::PgType::Int8)]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn released_connections_skip_the_pools_check_and_go_back_to_it_soon() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        use deadpool_diesel::postgres::{Manager, Pool};
        use deadpool_diesel::{ManagerConfig, RecyclingMethod, Runtime};
        use diesel::RunQueryDsl;

        let url = pgmill_drivertest::testdb::url();
        let checks = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&checks);
        let manager = Manager::from_config(
            url.as_str(),
            Runtime::Tokio1,
            ManagerConfig {
                recycling_method: RecyclingMethod::CustomFunction(Box::new(move |_| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })),
            },
        );
        let pool = Pool::builder(manager)
            .max_size(4)
            .runtime(Runtime::Tokio1)
            .build()
            .unwrap();
        let driver = DieselDriver::from_pool(pool.clone(), url.as_str());
        // Back-to-back statements, each on a connection of its own: the first opens one, the
        // rest take it again without the pool's check.
        for n in 0..5_i64 {
            let mut conn = driver.acquire().await.unwrap();
            let got: i64 = conn
                .query_scalar(&Statement::new("SELECT $1::bigint AS n").bind(n))
                .await
                .unwrap();
            assert_eq!(got, n);
        }
        assert_eq!(
            checks.load(Ordering::SeqCst),
            0,
            "no check between statements"
        );
        assert_eq!(pool.status().size, 1, "one connection for all five");
        // Kept out of the pool briefly, then back in it: the next acquire is checked.
        let started = std::time::Instant::now();
        while pool.status().available == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the kept connection never went back to the pool"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(driver.acquire().await.unwrap());
        assert_eq!(
            checks.load(Ordering::SeqCst),
            1,
            "checked once back from the pool"
        );
        // A connection dropped inside a transaction is rolled back and returned to the pool, not
        // kept: the application's own checkout sees nothing of the transaction.
        {
            let mut conn = driver.acquire().await.unwrap();
            let mut tx = conn.begin().await.unwrap();
            tx.execute(&Statement::new("CREATE TEMP TABLE warm_probe (x int)"))
                .await
                .unwrap();
            // The transaction and its connection go here, neither committed nor rolled back.
        }
        let started = std::time::Instant::now();
        while pool.status().available == 0 {
            assert!(started.elapsed() < Duration::from_secs(5), "never returned");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let object = pool.get().await.unwrap();
        let probe = object
            .interact(|conn| diesel::sql_query("SELECT 1 FROM warm_probe").execute(conn))
            .await
            .unwrap();
        assert!(probe.is_err(), "the dropped transaction's table is gone");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pooled_statements_are_prepared_once_per_connection_unless_unnamed() {
        use pgmill_drivertest::prepared::{COUNT_PREPARED_MARKED, marked, marked_for_count};
        let url = pgmill_drivertest::testdb::url();
        // Cached: one prepared statement for the rows, one for the count.
        for (unnamed, expected) in [(false, 2), (true, 0)] {
            let driver = DieselDriver::connect(&url, 1).await.unwrap();
            let driver = if unnamed {
                driver.unnamed_statements()
            } else {
                driver
            };
            let mut conn = driver.acquire().await.unwrap();
            for n in 0..3 {
                let got: i64 = conn.query_scalar(&marked(n)).await.unwrap();
                assert_eq!(got, n);
                assert_eq!(conn.execute(&marked_for_count(n)).await.unwrap(), 1);
            }
            let mut tx = conn.begin().await.unwrap();
            let got: i64 = tx.query_scalar(&marked(7)).await.unwrap();
            assert_eq!(got, 7);
            tx.commit().await.unwrap();
            let prepared: i64 = conn
                .query_scalar(&Statement::new(COUNT_PREPARED_MARKED))
                .await
                .unwrap();
            assert_eq!(prepared, expected, "unnamed: {unnamed}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn app_connection_statements_follow_its_cache_setting() {
        use pgmill_drivertest::prepared::{COUNT_PREPARED_MARKED, marked, marked_for_count};
        let url = pgmill_drivertest::testdb::url();
        let counts = blocking(move || {
            [CacheSize::Unbounded, CacheSize::Disabled].map(|cache| {
                let mut conn = PgConnection::establish(&url).unwrap();
                conn.set_prepared_statement_cache_size(cache);
                conn.transaction::<_, super::HostError, _>(|conn| {
                    for n in 0..3 {
                        let got: i64 = conn.pgmill().query_scalar(&marked(n))?;
                        assert_eq!(got, n);
                        assert_eq!(conn.pgmill().execute(&marked_for_count(n))?, 1);
                    }
                    Ok(conn
                        .pgmill()
                        .query_scalar::<i64>(&Statement::new(COUNT_PREPARED_MARKED))?)
                })
                .unwrap()
            })
        })
        .await
        .unwrap();
        // One prepared statement for the rows and one for the count, or none.
        assert_eq!(counts, [2, 0]);
    }
}
