//! Where jobs are kept: the history ring's retention and slot width, and what holds vacuum back.

use std::time::Duration;

use chrono::TimeDelta;

use super::micros;
use crate::admin::{HolderKind, VacuumHolder};
use crate::driver::{FromRow, Row, Statement};
use crate::error::{Error, Result};
use crate::query::catalog::Query;
use crate::schema::Schema;

/// One slot of the history ring a truncation emptied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotRow(pub(crate) i16);

impl FromRow for SlotRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(SlotRow(row.take("slot")?))
    }
}

/// Empties the history slots whose rows are all past `completed` / `cancelled` (`None`: kept),
/// waiting at most `lock_wait` for each slot's lock.
pub(crate) fn storage_done_truncate_expired(
    schema: &Schema,
    completed: Option<TimeDelta>,
    cancelled: Option<TimeDelta>,
    lock_wait: Duration,
) -> Statement {
    schema
        .statement(Query::StorageDoneTruncateExpired)
        .bind(completed.map(micros))
        .bind(cancelled.map(micros))
        .bind(
            i32::try_from(lock_wait.as_millis())
                .unwrap_or(i32::MAX)
                .max(1),
        )
}

pub(crate) fn storage_set_done_slot_seconds(schema: &Schema, seconds: i32) -> Statement {
    schema
        .statement(Query::StorageSetDoneSlotSeconds)
        .bind(seconds)
}

impl FromRow for VacuumHolder {
    fn from_row(mut row: Row) -> Result<Self> {
        let visible = row.take("visible")?;
        let state = row.take("state")?;
        let application_name = row.take("application_name")?;
        let role = row.take("role_name")?;
        let held_for_us: Option<i64> = row.take("held_for_us")?;
        let xmin_age = row.take("xmin_age")?;
        let holder = row.take("holder")?;
        let kind = match row.take::<String>("kind")?.as_str() {
            "session" => HolderKind::Session,
            "replication_slot" => HolderKind::ReplicationSlot,
            "prepared_transaction" => HolderKind::PreparedTransaction,
            other => {
                return Err(Error::decode(
                    "kind",
                    format!("unknown holder kind {other:?}"),
                ));
            }
        };
        Ok(VacuumHolder {
            kind,
            holder,
            xmin_age,
            held_for: held_for_us.map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0))),
            role,
            application_name,
            state,
            visible,
        })
    }
}

pub(crate) fn storage_horizon(schema: &Schema, limit: usize) -> Statement {
    schema
        .statement(Query::StorageHorizon)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}
