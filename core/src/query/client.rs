//! Queries of client liveness rows (`pgmill_client`).

use crate::catalog::Query;
use crate::driver::Statement;
use crate::schema::Schema;

pub(crate) fn client_heartbeat(schema: &Schema, id: &str) -> Statement {
    schema.statement(Query::ClientHeartbeat).bind(id)
}

pub(crate) fn client_register(schema: &Schema, id: &str, hostname: &str, pid: i32) -> Statement {
    schema
        .statement(Query::ClientRegister)
        .bind(id)
        .bind(hostname)
        .bind(pid)
}

pub(crate) fn client_delete(schema: &Schema, id: &str) -> Statement {
    schema.statement(Query::ClientDelete).bind(id)
}
