//! The clients page: the leader and its term.

use axum::extract::State;
use axum::response::Response;
use maud::html;
use pgmill::driver::Driver;

use super::{Nav, Shell};
use crate::dashboard::AppState;
use crate::error::Result;
use crate::format;

/// `GET /clients`: the leader.
pub(crate) async fn page<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
) -> Result<Response> {
    let leader = app.client.leader().await?;
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
    };
    Ok(shell.page(Nav::Clients, "Clients and leader", html! {}, live))
}
