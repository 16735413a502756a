//! `pgmill clients`: the clients registered in the schema, their heartbeat and the leader.

use pgmill::admin::ClientRow;
use serde_json::json;

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::{Output, Table, time};

/// Runs `pgmill clients`.
///
/// # Errors
///
/// The connection or database error.
pub(crate) async fn run(ctx: &CommandContext) -> Result<Output, CliError> {
    let client = ctx.client().await?;
    Ok(list_output(&client.client_list().await?, ctx.json))
}

fn row_json(c: &ClientRow) -> serde_json::Value {
    json!({
        "id": c.id,
        "hostname": c.hostname,
        "pid": c.pid,
        "started_at": c.started_at.to_rfc3339(),
        "heartbeat_at": c.heartbeat_at.to_rfc3339(),
        "heartbeat_age_ms": u64::try_from(c.heartbeat_age.as_millis()).unwrap_or(u64::MAX),
        "live": c.live,
        "leader": c.leader,
        "queues": c.queues,
        "kinds": c.kinds,
    })
}

/// A heartbeat age for people: `850ms`, `12.3s`, `4m07s`.
fn age(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", d.as_secs_f64()),
        _ => format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60),
    }
}

fn list_output(rows: &[ClientRow], json: bool) -> Output {
    if json {
        return Output::Json(json!(rows.iter().map(row_json).collect::<Vec<_>>()));
    }
    let mut table = Table::new([
        "ID",
        "HOST",
        "PID",
        "STARTED_AT",
        "HEARTBEAT",
        "STATUS",
        "QUEUES",
        "KINDS",
    ])
    .right_align([2, 4]);
    for c in rows {
        let status = match (c.live, c.leader) {
            (true, true) => "live, leader",
            (true, false) => "live",
            (false, true) => "timed out, leader",
            (false, false) => "timed out",
        };
        table.row([
            c.id.clone(),
            c.hostname.clone(),
            c.pid.to_string(),
            time(c.started_at),
            age(c.heartbeat_age),
            status.to_owned(),
            c.queues.join(", "),
            c.kinds.join(", "),
        ]);
    }
    if rows.is_empty() {
        table.footer("no clients");
    } else if !rows.iter().any(|c| c.leader) {
        table.footer("no leader: nothing schedules, rescues or cleans until one is elected");
    }
    Output::Table(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ages_read_at_a_glance() {
        assert_eq!(age(Duration::from_millis(850)), "850ms");
        assert_eq!(age(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(age(Duration::from_secs(247)), "4m07s");
    }
}
