//! The clients page: every client registered in the schema (heartbeat age, host, pid, queues,
//! the job kinds it has workers for, liveness), the leader with its term, and the jobs waiting
//! for a kind no live client working their queue knows.

use axum::extract::State;
use axum::response::Response;
use maud::html;
use pgmill::driver::Driver;

use super::{Nav, Shell};
use crate::dashboard::AppState;
use crate::error::Result;
use crate::format;

/// `GET /clients`: the clients and the leader.
pub(crate) async fn page<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
) -> Result<Response> {
    let (clients, leader, unknown) = tokio::try_join!(
        app.client.client_list(),
        app.client.leader(),
        app.client.queue_unknown_kinds()
    )?;
    let live = html! {
        h2 { "Leader" }
        @match &leader {
            Some(l) => dl.props #leader {
                dt { "client" } dd { code { (l.leader_id) } }
                dt { "term began" } dd { (format::timestamp(l.elected_at)) }
                dt { "lease until" } dd { (format::timestamp(l.expires_at)) }
                dt { "lease length" } dd { (format::duration(l.expires_at - l.elected_at)) }
            },
            None => div.empty #leader { "No leader: no client is running, or the last lease ran out." },
        }
        h2 { "Clients (" (clients.len()) ")" }
        @if clients.is_empty() {
            div.empty #clients { "No client registered: a started client registers itself and refreshes its row with each heartbeat." }
        } @else {
            table #clients {
                thead { tr {
                    th { "client" } th { "status" } th { "hostname" } th.num { "pid" }
                    th { "queues" } th { "kinds" } th.num { "heartbeat age" } th { "started" }
                } }
                tbody {
                    @for c in &clients {
                        tr data-client=(c.id) {
                            td { code { (c.id) } }
                            td {
                                @if c.leader { span.badge.active { "leader" } " " }
                                @if c.live { span.badge.active { "live" } }
                                @else { span.badge.bad title="past the client timeout: its running jobs are rescued" { "presumed dead" } }
                            }
                            td { (c.hostname) }
                            td.num { (c.pid) }
                            td.queues {
                                @if c.queues.is_empty() { span.zero { "none" } }
                                @else { @for q in &c.queues { code { (q) } " " } }
                            }
                            td.kinds {
                                @if c.kinds.is_empty() { span.zero { "none" } }
                                @else { @for k in &c.kinds { code { (k) } " " } }
                            }
                            td.num.heartbeat {
                                (chrono::TimeDelta::from_std(c.heartbeat_age).map_or_else(|_| "—".to_owned(), format::duration))
                            }
                            td { (format::timestamp(c.started_at)) }
                        }
                    }
                }
            }
        }
    };
    let live = html! {
        (live)
        h2 { "Kinds no live client runs" }
        @if unknown.is_empty() {
            div.empty #unknown-kinds { "Every due job has a live client, working its queue, that has a worker for its kind." }
        } @else {
            p { "Each client claims only the kinds it has workers for: these jobs are not attempted until a client that knows their kind starts." }
            table #unknown-kinds {
                thead { tr { th { "queue" } th { "kind" } th.num { "due jobs" } th { "due since" } } }
                tbody {
                    @for u in &unknown {
                        tr data-queue=(u.queue) data-kind=(u.kind) {
                            td { code { (u.queue) } }
                            td { code { (u.kind) } }
                            td.num { (u.num_jobs) }
                            td { (format::timestamp(u.due_since)) }
                        }
                    }
                }
            }
        }
    };
    Ok(shell.page(Nav::Clients, "Clients and leader", html! {}, live))
}
