-- Jobs in the dead-letter queue, newest first (by when they entered it), below a keyset cursor,
-- optionally only some queues or kinds or ids: each with why it is there, when it entered and how
-- often it was redriven before.
-- $1: queues, or NULL
-- $2: kinds, or NULL
-- $3: ids, or NULL
-- $4: only jobs that entered before this (dead_at, id) position: dead_at, or NULL for the first
--     page
-- $5: the id of that position
-- $6: page size
SELECT x.id AS id, x.state::text AS state, x.queue AS queue, x.kind AS kind, x.args AS args,
    x.metadata AS metadata, x.priority AS priority, x.attempt AS attempt,
    x.max_attempts AS max_attempts, x.attempted_at AS attempted_at,
    x.attempted_by AS attempted_by, x.created_at AS created_at, x.scheduled_at AS scheduled_at,
    x.finalized_at AS finalized_at, x.errors AS errors, x.tags AS tags,
    NULL::bigint AS claim_token, x.dead_at AS dead_at, x.dead_reason AS dead_reason,
    x.redrive_count AS redrive_count
FROM {schema}.pgmill_job_dead AS x
WHERE ($1::text[] IS NULL OR x.queue = ANY($1::text[]))
    AND ($2::text[] IS NULL OR x.kind = ANY($2::text[]))
    AND ($3::bigint[] IS NULL OR x.id = ANY($3::bigint[]))
    AND ($4::timestamptz IS NULL OR (x.dead_at, x.id) < ($4::timestamptz, $5::bigint))
ORDER BY x.dead_at DESC, x.id DESC
LIMIT $6::bigint
