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
    let paused = json(&schema, &["queue", "pause", "mail"]);
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

    let page = json(&schema, &["job", "list", "--queue", "mail", "--limit", "1"]);
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
