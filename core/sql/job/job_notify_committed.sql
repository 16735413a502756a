-- Announces jobs inserted by transactions whose own insert notification was debounced, once
-- those transactions have committed: each of $2 is an inserting transaction's id (as the insert
-- statements return it, xact_id), $3 the queue it inserted into. A transaction is settled once it
-- completed before this statement's snapshot (so every later snapshot, a woken producer's claim
-- included, sees its rows if it committed): committed, rolled back, or of a status the server no
-- longer keeps (truncated away). One not completed by then is in progress, the newest ones
-- included: at or past the snapshot's xmax, which is one past the newest transaction completed,
-- not the next to be assigned. (A transaction this server never saw, one of the old primary's
-- after a failover, is in progress too until the server's own ids pass it, or the watcher gives
-- up on it.) The queues of the committed ones are each notified once. Run on its own
-- (autocommit), so the notifications are delivered after the commits they announce. Reads no
-- table: only the transactions' status, against one snapshot taken once.
-- Returns one row: the transactions still in progress (in_progress, NULL when none; one that
-- inserted into several of the queues given is listed once for each), which are looked at
-- again; every other one given is settled. A look comes after most of them ended, so this is the
-- short list, and the row is read however few are left.
-- $1: the insert channel, '<schema>.pgmill_insert'
-- $2: ids of the inserting transactions
-- $3: the queue of each
WITH snap AS MATERIALIZED (
    SELECT pg_current_snapshot() AS s
),
watched AS (
    SELECT w.xact_id AS xact_id, w.queue AS queue,
        CASE
            WHEN pg_visible_in_snapshot(w.xact_id::text::xid8, snap.s)
                THEN coalesce(pg_xact_status(w.xact_id::text::xid8), 'unknown')
            ELSE 'in progress'
        END AS status
    FROM snap CROSS JOIN unnest($2::bigint[], $3::text[]) AS w(xact_id, queue)
)
SELECT p.in_progress AS in_progress, n.num_notified AS num_notified
FROM (
    SELECT array_agg(xact_id) AS in_progress FROM watched WHERE status = 'in progress'
) AS p
CROSS JOIN (
    SELECT count(pg_notify($1::text, q.queue)) AS num_notified
    FROM (SELECT DISTINCT queue FROM watched WHERE status = 'committed') AS q
) AS n
