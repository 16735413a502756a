-- A page of jobs in id order after a cursor, filtered; a NULL filter matches everything.
-- $1: states (text), or NULL
-- $2: queues, or NULL
-- $3: kinds, or NULL
-- $4: ids, or NULL
-- $5: return only ids greater than this (the cursor; 0 for the first page)
-- $6: page size
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
FROM {schema}.pgmill_job AS j
WHERE ($1::text[] IS NULL OR j.state::text = ANY($1::text[]))
    AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
    AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
    AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
    AND j.id > $5::bigint
ORDER BY j.id
LIMIT $6::bigint
