-- Reverts version 9: the finished jobs in the history and the dead-letter queue go back into
-- pgmill_job under their own ids, as version 8 kept them (its cleaner deletes them past their
-- retention), then the new tables go.

INSERT INTO {schema}.pgmill_job (id, state, queue, kind, args, metadata, priority, attempt,
    max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at, errors,
    tags, unique_key, unique_states)
OVERRIDING SYSTEM VALUE
SELECT id, state, queue, kind, args, metadata, priority, attempt, max_attempts, attempted_at,
    attempted_by, created_at, scheduled_at, finalized_at, errors, tags, unique_key, unique_states
FROM {schema}.pgmill_job_done
UNION ALL
SELECT id, state, queue, kind, args, metadata, priority, attempt, max_attempts, attempted_at,
    attempted_by, created_at, scheduled_at, finalized_at, errors, tags, unique_key, unique_states
FROM {schema}.pgmill_job_dead
ON CONFLICT DO NOTHING;

DROP VIEW {schema}.pgmill_job_all;
DROP TABLE {schema}.pgmill_job_dead;
DROP FUNCTION {schema}.pgmill_job_done_truncate_expired(timestamptz, timestamptz, smallint, integer);
DROP TABLE {schema}.pgmill_job_done;
DROP FUNCTION {schema}.pgmill_job_done_slot(timestamptz, integer);
DROP TABLE {schema}.pgmill_storage;
