-- Inserts one job due now with no metadata and no tags: job_insert_one.sql's lean form for the
-- common case. Every other column takes its default (state available, metadata, tags, and
-- created_at and scheduled_at both now()), so the server decides nothing and parses no JSON or
-- array beyond the args. Sends no notification: job_insert_plain_one_notify.sql is this insert
-- carrying one. A plain VALUES row, which the server sets up for each execution at less cost than
-- the notifying form's subquery (a few per cent of the whole transaction's server work).
-- Returns the id, created_at (scheduled_at is the same now(), and the state is available: the
-- client fills both in rather than having them sent) and the inserting transaction's id
-- (xact_id), which the commit watcher asks the database about when it is to announce the job
-- after that transaction commits.
-- $1: queue
-- $2: kind
-- $3: args, as JSON text (written straight from the job's value; the server parses it as it
--     parses a jsonb value)
-- $4: priority
-- $5: max_attempts
INSERT INTO {schema}.pgmill_job AS j (queue, kind, args, priority, max_attempts)
VALUES ($1::text, $2::text, $3::text::jsonb, $4::smallint, $5::smallint)
RETURNING j.id AS id, j.created_at AS created_at, pg_current_xact_id()::text::bigint AS xact_id
