//! migrate, queue and job commands.

use pgmill_testdb::fresh_schema_name;
use serde_json::json;

use crate::{drop_schema, json, ok, pgmill, sql};

#[test]
fn migrate_up_status_and_down_round_trip() {
    let schema = fresh_schema_name();
    let status = json(&schema, &["migrate", "status"]);
    assert_eq!(status["current"], 0);
    assert_eq!(status["up_to_date"], false);

    let latest = pgmill::Migrator::latest_version();
    let up = json(&schema, &["migrate", "up"]);
    assert_eq!(up["versions"], json!((1..=latest).collect::<Vec<_>>()));
    let again = ok(&schema, &["migrate", "up"]);
    assert!(again.contains("nothing to migrate up"), "{again}");

    let status = json(&schema, &["migrate", "status"]);
    assert_eq!(status["current"], latest);
    assert_eq!(status["up_to_date"], true);
    let table = ok(&schema, &["migrate", "status"]);
    assert!(
        table.contains("VERSION") && table.contains("applied"),
        "{table}"
    );
    assert!(table.contains("(up to date)"), "{table}");

    let down = ok(&schema, &["migrate", "down"]);
    assert!(
        down.contains(&format!("reverted version {latest}")),
        "{down}"
    );
    let status = json(&schema, &["migrate", "status"]);
    assert_eq!(status["current"], latest - 1);
    let down = ok(&schema, &["migrate", "down", "--target", "0"]);
    assert!(down.contains("reverted version"), "{down}");
    let status = json(&schema, &["migrate", "status"]);
    assert_eq!(status["current"], 0);
    drop_schema(&schema);
}

#[test]
fn queue_and_job_commands_administer_a_schema() {
    let schema = fresh_schema_name();
    ok(&schema, &["migrate", "up"]);

    assert_eq!(json(&schema, &["queue", "list"]), json!([]));
    let unknown = pgmill(&schema, &["queue", "pause", "mail"]);
    assert!(!unknown.status.success());
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.contains("no queue \"mail\"") && stderr.contains("--create"),
        "{stderr}"
    );
    assert_eq!(
        json(&schema, &["queue", "list"]),
        json!([]),
        "nothing created"
    );
    let paused = json(&schema, &["queue", "pause", "mail", "--create"]);
    assert_eq!(paused, json!({"paused": ["mail"]}));
    let queues = json(&schema, &["queue", "list"]);
    assert_eq!(queues[0]["name"], "mail");
    assert_eq!(queues[0]["paused"], true);
    let text = ok(&schema, &["queue", "resume", "mail"]);
    assert_eq!(text.trim(), "resumed: mail");
    let table = ok(&schema, &["queue", "list"]);
    assert!(
        table.starts_with("QUEUE") && table.contains("mail"),
        "{table}"
    );

    let page = json(&schema, &["job", "list"]);
    assert_eq!(page, json!({"jobs": [], "next_cursor": null}));

    let rows = sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_job (queue, kind, args) \
         VALUES ('mail', 'send', '{{\"to\": \"a\"}}'), ('mail', 'send', '{{\"to\": \"b\"}}') \
         RETURNING id"
    ));
    let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    let (first, second) = (ids[0].to_string(), ids[1].to_string());

    // No client works `mail`, nor `mial`, a name no producer registered.
    sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_job (queue, kind) VALUES ('mial', 'send')"
    ));
    let unserved = json(&schema, &["queue", "unserved"]);
    let names: Vec<&str> = unserved
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mail", "mial"], "{unserved}");
    assert_eq!(unserved[0]["counts"]["available"], 2);
    assert_eq!(unserved[1]["registered"], false);
    let table = ok(&schema, &["queue", "unserved"]);
    assert!(
        table.contains("REGISTERED") && table.contains("mial"),
        "{table}"
    );
    let table = ok(&schema, &["queue", "list"]);
    assert!(
        table.contains("SERVED") && table.contains("1 more queue(s)"),
        "{table}"
    );
    // A queue holding live jobs exists: it pauses without --create.
    let paused = json(&schema, &["queue", "pause", "mial"]);
    assert_eq!(paused, json!({"paused": ["mial"]}));
    sql(&format!(
        "DELETE FROM \"{schema}\".pgmill_job WHERE queue = 'mial'"
    ));

    let page = json(
        &schema,
        &["job", "list", "--oldest", "--queue", "mail", "--limit", "1"],
    );
    assert_eq!(page["jobs"][0]["id"], ids[0]);
    assert_eq!(page["next_cursor"], ids[0]);
    let page = json(
        &schema,
        &["job", "list", "--after", &first, "--state", "available"],
    );
    assert_eq!(page["jobs"][0]["id"], ids[1]);
    let none = json(&schema, &["job", "list", "--state", "completed"]);
    assert_eq!(none["jobs"], json!([]));
    let table = ok(&schema, &["job", "list"]);
    assert!(
        table.contains("send") && table.contains("available"),
        "{table}"
    );

    let job = json(&schema, &["job", "get", &first]);
    assert_eq!(job["args"], json!({"to": "a"}));
    let detail = ok(&schema, &["job", "get", &first]);
    assert!(
        detail.contains("state:") && detail.contains("{\"to\":\"a\"}"),
        "{detail}"
    );

    let cancelled = json(&schema, &["job", "cancel", &first]);
    assert_eq!(cancelled["state"], "cancelled");
    let retried = json(&schema, &["job", "retry", &first]);
    assert_eq!(retried["state"], "available");
    let deleted = ok(&schema, &["job", "delete", &second]);
    assert!(deleted.contains("deleted"), "{deleted}");

    let gone = pgmill(&schema, &["job", "get", &second]);
    assert!(!gone.status.success());
    let stderr = String::from_utf8_lossy(&gone.stderr);
    assert_eq!(stderr, format!("pgmill: job {second} not found\n"));
    drop_schema(&schema);
}

#[test]
fn a_schema_not_migrated_gets_the_migrate_hint() {
    let schema = fresh_schema_name();
    let out = pgmill(&schema, &["job", "list"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("run `pgmill migrate up`"), "{stderr}");
    drop_schema(&schema);
}

#[test]
fn job_list_is_newest_first_and_job_get_cuts_long_args() {
    let schema = fresh_schema_name();
    ok(&schema, &["migrate", "up"]);
    let rows = sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_job (queue, kind, args) \
         VALUES ('q', 'k', jsonb_build_object('blob', repeat('x', 5000))), ('q', 'k', '{{}}') \
         RETURNING id"
    ));
    let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    let page = json(&schema, &["job", "list", "--limit", "1"]);
    assert_eq!(page["jobs"][0]["id"], ids[1]);
    assert_eq!(page["next_cursor"], ids[1]);
    let older = json(&schema, &["job", "list", "--before", &ids[1].to_string()]);
    assert_eq!(older["jobs"][0]["id"], ids[0]);
    let oldest = json(&schema, &["job", "list", "--oldest", "--limit", "1"]);
    assert_eq!(oldest["jobs"][0]["id"], ids[0]);
    let table = ok(&schema, &["job", "list", "--limit", "1"]);
    assert!(table.contains(&format!("--before {}", ids[1])), "{table}");

    let first = ids[0].to_string();
    let cut = ok(&schema, &["job", "get", &first]);
    assert!(
        cut.contains("--full shows all") && cut.len() < 4_000,
        "{}",
        cut.len()
    );
    let full = ok(&schema, &["job", "get", &first, "--full"]);
    assert!(full.contains(&"x".repeat(5000)) && !full.contains("--full shows all"));
    drop_schema(&schema);
}

#[test]
fn bulk_actions_count_first_and_need_a_confirmation() {
    let schema = fresh_schema_name();
    ok(&schema, &["migrate", "up"]);
    sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_job (queue, kind, args, state, finalized_at) \
         SELECT 'q', 'k', '{{}}', 'discarded', now() FROM generate_series(1, 1200)"
    ));
    sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_job (queue, kind, args) VALUES ('other', 'k', '{{}}')"
    ));
    // No terminal to ask on and no --yes: nothing is done.
    let refused = pgmill(&schema, &["job", "retry", "--state", "discarded"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("1200 job(s) to retry") && stderr.contains("--yes"),
        "{stderr}"
    );
    let retried = json(&schema, &["job", "retry", "--state", "discarded", "--yes"]);
    assert_eq!(
        retried,
        json!({"action": "retry", "matched": 1200, "changed": 1200})
    );
    let available = sql(&format!(
        "SELECT count(*) FROM \"{schema}\".pgmill_job WHERE state = 'available'"
    ));
    assert_eq!(available[0].get::<_, i64>(0), 1201);
    let deleted = ok(&schema, &["job", "delete", "--queue", "other", "-y"]);
    assert_eq!(deleted.trim(), "deleted 1 job(s) of 1 matched");
    let none = json(&schema, &["job", "cancel", "--queue", "nowhere", "--yes"]);
    assert_eq!(none["matched"], 0);
    assert!(
        !pgmill(&schema, &["job", "cancel", "1", "--queue", "q"])
            .status
            .success()
    );
    drop_schema(&schema);
}

#[test]
fn periodic_and_clients_commands() {
    let schema = fresh_schema_name();
    ok(&schema, &["migrate", "up"]);
    sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_periodic (name, schedule, next_run_at) \
         VALUES ('nightly', '0 3 * * *', now() + interval '1 hour')"
    ));
    sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_client (id, hostname, pid) VALUES ('c1', 'h', 7)"
    ));
    sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_leader (name, leader_id, elected_at, expires_at) \
         VALUES ('default', 'c1', now(), now() + interval '1 minute')"
    ));
    let list = json(&schema, &["periodic", "list"]);
    assert_eq!(list[0]["name"], "nightly");
    assert_eq!(list[0]["paused"], false);
    assert_eq!(
        ok(&schema, &["periodic", "pause", "nightly"]).trim(),
        "paused: nightly"
    );
    assert_eq!(json(&schema, &["periodic", "list"])[0]["paused"], true);
    assert_eq!(
        json(&schema, &["periodic", "resume", "nightly"]),
        json!({"resumed": ["nightly"]})
    );
    let missing = pgmill(&schema, &["periodic", "pause", "nope"]);
    assert!(!missing.status.success());
    let table = ok(&schema, &["periodic", "list"]);
    assert!(
        table.starts_with("NAME") && table.contains("0 3 * * *"),
        "{table}"
    );
    // A schedule in a time zone: its next run shows on that zone's wall clock.
    sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_periodic \
         (name, schedule, next_run_at, time_zone, zoned_schedule, zoned_next_run_at) \
         VALUES ('standup', 'cron 30 2 * * * in America/New_York', now(), 'America/New_York', \
         'cron 30 2 * * * in America/New_York', '2030-01-10 07:30:00+00')"
    ));
    let list = json(&schema, &["periodic", "list"]);
    let standup = &list[1];
    assert_eq!(standup["name"], "standup");
    assert_eq!(standup["time_zone"], "America/New_York");
    assert_eq!(standup["next_run_at"], "2030-01-10T07:30:00+00:00");
    assert_eq!(standup["next_run_local"], "2030-01-10T02:30:00-05:00");
    assert_eq!(list[0]["time_zone"], serde_json::Value::Null);
    let table = ok(&schema, &["periodic", "list"]);
    assert!(
        table.contains("cron 30 2 * * * in America/New_York")
            && table.contains("2030-01-10 02:30:00 EST"),
        "{table}"
    );

    let clients = json(&schema, &["clients"]);
    assert_eq!(clients[0]["id"], "c1");
    assert_eq!(clients[0]["live"], true);
    assert_eq!(clients[0]["leader"], true);
    let table = ok(&schema, &["clients"]);
    assert!(
        table.contains("c1") && table.contains("live, leader"),
        "{table}"
    );
    drop_schema(&schema);
}

#[test]
fn dead_commands_list_redrive_and_purge_and_refuse_no_filter() {
    let schema = fresh_schema_name();
    ok(&schema, &["migrate", "up"]);
    // Three dead jobs: two in `mail`, one in `bills`.
    sql(&format!(
        "INSERT INTO \"{schema}\".pgmill_job_dead (id, queue, kind, args, metadata, priority, \
         attempt, max_attempts, attempted_by, created_at, scheduled_at, finalized_at, errors, \
         tags, dead_reason) \
         SELECT g, CASE WHEN g < 3 THEN 'mail' ELSE 'bills' END, 'send', '{{}}', '{{}}', 1, 3, 3, \
             '{{}}', now(), now(), now(), \
             ARRAY[jsonb_build_object('attempt', 3, 'at', now(), 'error', 'boom ' || g, \
                 'panic', false)], \
             '{{}}', 'max_attempts' \
         FROM generate_series(1, 3) AS g"
    ));
    let list = json(&schema, &["dead", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 3);
    assert_eq!(list[0]["reason"], "max_attempts");
    let table = ok(&schema, &["dead", "list", "--queue", "mail"]);
    assert!(table.starts_with("ID") && table.contains("mail"), "{table}");
    assert!(!table.contains("bills"), "{table}");

    for action in ["redrive", "purge"] {
        let refused = pgmill(&schema, &["dead", action]);
        assert!(!refused.status.success(), "{action} without a filter");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(err.contains("needs a filter"), "{err}");
    }
    assert_eq!(
        json(&schema, &["dead", "list"]).as_array().unwrap().len(),
        3
    );

    let redriven = json(&schema, &["dead", "redrive", "--queue", "mail"]);
    assert_eq!(redriven, json!({"redriven": [1, 2], "conflicts": []}));
    let back = sql(&format!(
        "SELECT id, state::text AS state FROM \"{schema}\".pgmill_job ORDER BY id"
    ));
    let back: Vec<(i64, String)> = back.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        back,
        [(1, "available".to_owned()), (2, "available".to_owned())]
    );
    assert_eq!(
        ok(&schema, &["dead", "purge", "--all"]).trim(),
        "purged 1 dead job(s)"
    );
    assert_eq!(json(&schema, &["dead", "list"]), json!([]));
    let horizon = json(&schema, &["dead", "horizon"]);
    assert!(horizon["holders"].is_array(), "{horizon}");
    drop_schema(&schema);
}

#[test]
fn retention_commands_set_list_and_clear_rules() {
    let schema = fresh_schema_name();
    ok(&schema, &["migrate", "up"]);
    let empty = ok(&schema, &["retention", "list"]);
    assert!(empty.contains("no retention rules"), "{empty}");
    let set = json(&schema, &["retention", "set", "events", "completed", "90m"]);
    assert_eq!(set[0]["keep_s"], 5_400);
    ok(&schema, &["retention", "set", "*", "discarded", "forever"]);
    let table = ok(&schema, &["retention", "list"]);
    assert!(table.contains("events") && table.contains("90m"), "{table}");
    assert!(table.contains("forever"), "{table}");
    let rows = sql(&format!(
        "SELECT queue, state::text AS state, keep_seconds FROM \"{schema}\".pgmill_retention \
         ORDER BY queue"
    ));
    let stored: Vec<(String, String, Option<i64>)> = rows
        .iter()
        .map(|r| (r.get("queue"), r.get("state"), r.get("keep_seconds")))
        .collect();
    assert_eq!(
        stored,
        [
            ("*".to_owned(), "discarded".to_owned(), None),
            ("events".to_owned(), "completed".to_owned(), Some(5_400)),
        ]
    );
    // Bad input is refused and stores nothing.
    for args in [
        ["retention", "set", "events", "running", "1h"],
        ["retention", "set", "events", "completed", "1w"],
        ["retention", "set", "bad queue", "completed", "1h"],
        ["retention", "set", "events", "completed", "0s"],
    ] {
        let refused = pgmill(&schema, &args);
        assert!(!refused.status.success(), "{args:?}");
    }
    assert_eq!(
        json(&schema, &["retention", "list"])
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        json(&schema, &["retention", "clear", "events", "completed"]),
        json!({ "removed": true })
    );
    assert_eq!(
        ok(&schema, &["retention", "clear", "events", "completed"]).trim(),
        "events had no rule for completed jobs"
    );
    drop_schema(&schema);
}
