//! Migrations up, down and up again, status, and racing migrators, on the driver's connections.

use pgmill::driver::{Driver, Executor, Statement, Transaction};
use pgmill::{Direction, Migrator, Schema};

use crate::{Harness, TestContext, testdb};

const TABLES: [&str; 6] = [
    "pgmill_client",
    "pgmill_job",
    "pgmill_leader",
    "pgmill_migration",
    "pgmill_periodic",
    "pgmill_queue",
];

/// Names of the tables, types and functions in `schema`, sorted.
async fn objects<E: Executor>(exec: &mut E, schema: &Schema) -> Vec<String> {
    let stmt = Statement::new(
        "SELECT name FROM ( \
           SELECT c.relname::text AS name FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1::text AND c.relkind = 'r' \
           UNION ALL SELECT t.typname::text FROM pg_type t \
             JOIN pg_namespace n ON n.oid = t.typnamespace \
             WHERE n.nspname = $1::text AND t.typtype = 'e' \
           UNION ALL SELECT p.proname::text FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1::text \
         ) o ORDER BY name",
    )
    .bind(schema.name());
    names(exec, &stmt).await
}

/// The `name` column of every row of a catalog query, in order.
async fn names<E: Executor>(exec: &mut E, stmt: &Statement) -> Vec<String> {
    exec.query(stmt)
        .await
        .expect("catalog query")
        .iter()
        .map(|r| r.get("name").unwrap())
        .collect()
}

async fn tables<E: Executor>(exec: &mut E, schema: &Schema) -> Vec<String> {
    objects(exec, schema)
        .await
        .into_iter()
        .filter(|o| TABLES.contains(&o.as_str()))
        .collect()
}

/// `up` applies every version and creates every table.
pub async fn up_creates_every_table<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let m = Migrator::new(ctx.schema.clone());
    let report = m.up(&mut conn, None).await.expect("up");
    assert_eq!(report.direction, Direction::Up);
    assert_eq!(
        report.versions,
        (1..=Migrator::latest_version()).collect::<Vec<_>>()
    );
    assert_eq!(tables(&mut conn, &ctx.schema).await, TABLES);
    let status = m.status(&mut conn).await.expect("status");
    assert!(status.is_up_to_date());
    assert_eq!(status.current(), status.latest);
}

/// Running `up` again applies nothing and changes nothing.
pub async fn up_again_is_a_no_op<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let mut conn = ctx.conn().await;
    let before = objects(&mut conn, &ctx.schema).await;
    let report = Migrator::new(ctx.schema.clone())
        .up(&mut conn, None)
        .await
        .expect("up again");
    assert!(report.versions.is_empty());
    assert_eq!(objects(&mut conn, &ctx.schema).await, before);
}

/// `down` to 0 removes every table, type and function, leaving the schema empty.
pub async fn down_to_zero_removes_everything<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let mut conn = ctx.conn().await;
    let m = Migrator::new(ctx.schema.clone());
    let report = m.down(&mut conn, 0).await.expect("down");
    assert_eq!(
        report.versions,
        (1..=Migrator::latest_version()).rev().collect::<Vec<_>>()
    );
    assert!(objects(&mut conn, &ctx.schema).await.is_empty());
    let status = m
        .status(&mut conn)
        .await
        .expect("status on an empty schema");
    assert_eq!(status.current(), 0);
    assert_eq!(status.pending.len() as u32, status.latest);
    assert!(
        m.down(&mut conn, 0)
            .await
            .expect("down again")
            .versions
            .is_empty()
    );
}

/// Up, down, then up again ends in the same schema as the first up.
pub async fn up_down_up_again_works<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let m = Migrator::new(ctx.schema.clone());
    m.up(&mut conn, None).await.expect("up");
    let first = objects(&mut conn, &ctx.schema).await;
    m.down(&mut conn, 0).await.expect("down");
    m.up(&mut conn, None).await.expect("up again");
    assert_eq!(objects(&mut conn, &ctx.schema).await, first);
}

/// What a version's tables are made of: every column with its type and default, every constraint
/// with its definition and whether it is validated, every index with its definition, and the name
/// of every function; sorted.
async fn table_shape<E: Executor>(exec: &mut E, schema: &Schema) -> Vec<String> {
    let stmt = Statement::new(
        "SELECT name FROM ( \
           SELECT format('column %s.%s %s default %s', c.relname, a.attname, \
               format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid)) AS name \
             FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE n.nspname = $1::text AND c.relkind = 'r' AND a.attnum > 0 \
               AND NOT a.attisdropped \
           UNION ALL SELECT format('constraint %s.%s %s validated %s', c.relname, k.conname, \
               pg_get_constraintdef(k.oid), k.convalidated) \
             FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1::text \
           UNION ALL SELECT format('index %s', pg_get_indexdef(i.indexrelid)) \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1::text \
           UNION ALL SELECT format('function %s', p.proname) FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1::text \
         ) s ORDER BY name",
    )
    .bind(schema.name());
    names(exec, &stmt).await
}

/// Every version's `down` gives back exactly the tables of the version before it: the same
/// columns, constraints (validated or not), indexes and functions as going up to that version did.
pub async fn every_down_restores_the_version_before<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let m = Migrator::new(ctx.schema.clone());
    let latest = Migrator::latest_version();
    let mut shapes = Vec::new();
    for v in 1..=latest {
        m.up(&mut conn, Some(v)).await.expect("up one version");
        shapes.push(table_shape(&mut conn, &ctx.schema).await);
    }
    for v in (1..latest).rev() {
        m.down(&mut conn, v).await.expect("down one version");
        assert_eq!(
            table_shape(&mut conn, &ctx.schema).await,
            shapes[v as usize - 1],
            "down from version {} to {v}",
            v + 1
        );
    }
}

/// `up` to a target stops there; a later `up` applies the rest.
pub async fn up_to_a_target_then_the_rest<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let m = Migrator::new(ctx.schema.clone());
    let report = m.up(&mut conn, Some(1)).await.expect("up to 1");
    assert_eq!(report.versions, [1]);
    assert_eq!(m.status(&mut conn).await.expect("status").current(), 1);
    let rest = m.up(&mut conn, None).await.expect("up to latest");
    assert_eq!(
        rest.versions,
        (2..=Migrator::latest_version()).collect::<Vec<_>>()
    );
}

/// Status lists what is applied (with its time) and what is pending.
pub async fn status_reports_applied_and_pending<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let m = Migrator::new(ctx.schema.clone());
    let before = m.status(&mut conn).await.expect("status");
    assert!(before.applied.is_empty());
    assert_eq!(before.pending, (1..=before.latest).collect::<Vec<_>>());
    m.up(&mut conn, None).await.expect("up");
    let after = m.status(&mut conn).await.expect("status");
    assert!(after.pending.is_empty());
    assert_eq!(after.applied[0].version, 1);
    assert_eq!(after.applied[0].line, "main");
}

/// An unknown target version is refused before touching the database.
pub async fn unknown_target_is_an_error<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let m = Migrator::new(ctx.schema.clone());
    let err = m.up(&mut conn, Some(9999)).await.expect_err("unknown");
    assert!(matches!(err, pgmill::Error::Migration(_)), "{err}");
    let err = m.down(&mut conn, 9999).await.expect_err("unknown");
    assert!(matches!(err, pgmill::Error::Migration(_)), "{err}");
    assert!(tables(&mut conn, &ctx.schema).await.is_empty());
}

/// Two migrators racing on one schema apply each version exactly once, and both succeed.
pub async fn two_migrators_racing_apply_each_version_once<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut reports = Vec::new();
    for _ in 0..3 {
        let schema = Schema::new(&testdb::fresh_schema_name()).unwrap();
        let (mut a, mut b) = (ctx.conn().await, ctx.conn().await);
        let (ma, mb) = (Migrator::new(schema.clone()), Migrator::new(schema.clone()));
        let (ra, rb) = tokio::join!(ma.up(&mut a, None), mb.up(&mut b, None));
        let (ra, rb) = (ra.expect("first migrator"), rb.expect("second migrator"));
        let mut all: Vec<u32> = ra.versions.iter().chain(&rb.versions).copied().collect();
        all.sort();
        assert_eq!(all, (1..=Migrator::latest_version()).collect::<Vec<_>>());
        assert_eq!(tables(&mut a, &schema).await, TABLES);
        reports.push((ra, rb));
    }
    assert_eq!(reports.len(), 3);
}

/// A schema name with capitals is quoted everywhere, so it stays distinct from its lowercase twin.
pub async fn mixed_case_schema_is_quoted<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let name = format!("{}_Mixed", ctx.schema.name());
    let schema = Schema::new(&name).unwrap();
    let mut conn = ctx.conn().await;
    Migrator::new(schema.clone())
        .up(&mut conn, None)
        .await
        .expect("up");
    assert_eq!(tables(&mut conn, &schema).await, TABLES);
    let lower = Schema::new(&name.to_lowercase()).unwrap();
    assert!(tables(&mut conn, &lower).await.is_empty());
    Migrator::new(schema.clone())
        .down(&mut conn, 0)
        .await
        .expect("down");
    conn.execute_script(&format!("DROP SCHEMA {}", schema.quoted()))
        .await
        .expect("drop schema");
}

/// The schema refuses a finished job without `finalized_at`, and a running job with one.
pub async fn finalized_at_check_is_enforced<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let mut conn = ctx.conn().await;
    let insert = |state: &str, finalized: bool| {
        ctx.stmt(&format!(
            "INSERT INTO {{schema}}.pgmill_job (kind, state, finalized_at) VALUES ('k', '{state}', {})",
            if finalized { "now()" } else { "NULL" }
        ))
    };
    for (state, finalized) in [
        ("completed", false),
        ("running", true),
        ("discarded", false),
    ] {
        let err = conn
            .execute(&insert(state, finalized))
            .await
            .expect_err("violates the check");
        assert_eq!(err.sqlstate(), Some("23514"), "{state}: {err}");
    }
    for (state, finalized) in [("completed", true), ("available", false)] {
        conn.execute(&insert(state, finalized))
            .await
            .expect("allowed");
    }
    // Defaults fill every non-null column.
    let row = conn
        .query(&ctx.stmt(
            "SELECT args, metadata, errors, tags, queue, priority::bigint AS priority \
             FROM {schema}.pgmill_job WHERE state = 'available'",
        ))
        .await
        .expect("select");
    assert_eq!(row[0].get::<String>("queue").unwrap(), "default");
    assert_eq!(row[0].get::<i64>("priority").unwrap(), 1);
    let _ = ctx.driver.clone().acquire().await.expect("pool still fine");
}

/// Each of the job table's row rules refuses a row that breaks only it, on insert and on update,
/// with SQLSTATE 23514 and the rule's name; rows at the edges of every rule are let in; the rules
/// hold in a session whose search path puts look-alike functions before `pg_catalog`; and they
/// are one validated constraint.
pub async fn row_rules_refuse_each_bad_row_by_name<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let mut conn = ctx.conn().await;
    let refused: [(&str, String); 12] = [
        (
            "finalized_at_iff_final",
            "(kind, state) VALUES ('k', 'completed')".into(),
        ),
        (
            "finalized_at_iff_final",
            "(kind, finalized_at) VALUES ('k', now())".into(),
        ),
        (
            "priority_in_range",
            "(kind, priority) VALUES ('k', 0)".into(),
        ),
        (
            "priority_in_range",
            "(kind, priority) VALUES ('k', 5)".into(),
        ),
        ("queue_length", "(kind, queue) VALUES ('k', '')".into()),
        (
            "queue_length",
            format!("(kind, queue) VALUES ('k', '{}')", "q".repeat(129)),
        ),
        (
            "queue_name",
            "(kind, queue) VALUES ('k', 'bad queue')".into(),
        ),
        (
            "kind_length",
            format!("(kind) VALUES ('{}')", "k".repeat(129)),
        ),
        (
            "max_attempts_positive",
            "(kind, max_attempts) VALUES ('k', 0)".into(),
        ),
        (
            "attempt_not_negative",
            "(kind, attempt) VALUES ('k', -1)".into(),
        ),
        (
            "args_is_object_or_array",
            "(kind, args) VALUES ('k', '\"text\"')".into(),
        ),
        (
            "metadata_is_object",
            "(kind, metadata) VALUES ('k', '[]')".into(),
        ),
    ];
    for (rule, values) in &refused {
        let insert = format!("INSERT INTO {{schema}}.pgmill_job {values}");
        assert_refused_by(&mut conn, &ctx.stmt(&insert), rule).await;
    }
    let edges = [
        format!(
            "(kind, queue, priority, max_attempts, attempt, args, metadata) VALUES \
             ('{}', '{}', 4, 1, 0, '[]', '{{}}')",
            "é".repeat(128),
            "aZ09_.:/-".repeat(14) + "xy"
        ),
        "(kind, priority, args, state, finalized_at) VALUES ('k', 1, '{}', 'discarded', now())"
            .into(),
        "(kind, queue) VALUES ('k', 'default')".into(),
    ];
    for values in &edges {
        conn.execute(&ctx.stmt(&format!("INSERT INTO {{schema}}.pgmill_job {values}")))
            .await
            .unwrap_or_else(|e| panic!("{values}: {e}"));
    }
    // Updates are held to the same rules.
    for (rule, set) in [
        ("priority_in_range", "priority = 9"),
        ("queue_name", "queue = 'semi;colon'"),
        ("finalized_at_iff_final", "state = 'completed'"),
    ] {
        let update = format!("UPDATE {{schema}}.pgmill_job SET {set} WHERE queue = 'default'");
        assert_refused_by(&mut conn, &ctx.stmt(&update), rule).await;
    }
    // A session whose search path finds a look-alike char_length before pg_catalog's.
    ctx.script(&ctx.schema.render(
        "CREATE FUNCTION {schema}.char_length(text) RETURNS integer \
         LANGUAGE sql IMMUTABLE AS 'SELECT 1'",
    ))
    .await;
    let mut tx = conn.begin().await.expect("begin");
    tx.execute(&Statement::new(format!(
        "SET LOCAL search_path = {}, pg_catalog",
        ctx.schema.quoted()
    )))
    .await
    .expect("search path");
    let looked_alike: i32 = tx
        .query_scalar(&Statement::new("SELECT char_length('three') AS n"))
        .await
        .expect("look-alike");
    assert_eq!(
        looked_alike, 1,
        "the look-alike is the one the session finds"
    );
    let err = tx
        .execute(&ctx.stmt(&format!(
            "INSERT INTO {{schema}}.pgmill_job (kind) VALUES ('{}')",
            "k".repeat(129)
        )))
        .await
        .expect_err("still too long");
    assert!(err.to_string().contains("\"kind_length\""), "{err}");
    tx.rollback().await.expect("rollback");
    let constraints = ctx
        .conn()
        .await
        .query(&ctx.stmt(
            "SELECT conname::text AS name, convalidated AS validated FROM pg_constraint \
             WHERE conrelid = '{schema}.pgmill_job'::regclass AND contype = 'c'",
        ))
        .await
        .expect("constraints");
    let constraints: Vec<(String, bool)> = constraints
        .iter()
        .map(|r| (r.get("name").unwrap(), r.get("validated").unwrap()))
        .collect();
    assert_eq!(constraints, [("row_is_valid".to_owned(), true)]);
    assert_eq!(ctx.count("pgmill_job").await, edges.len() as i64);
}

/// Asserts that `stmt` fails on the job table's row rule `rule`: SQLSTATE 23514, the rule named.
async fn assert_refused_by<E: Executor>(exec: &mut E, stmt: &Statement, rule: &str) {
    let err = exec.execute(stmt).await.expect_err("breaks a rule");
    let sql = stmt.sql();
    assert_eq!(err.sqlstate(), Some("23514"), "{sql}: {err}");
    assert!(
        err.to_string().contains(&format!("\"{rule}\"")),
        "{sql}: {err}"
    );
}
