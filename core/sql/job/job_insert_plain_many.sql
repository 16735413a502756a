-- Inserts jobs due now (or pending) that carry no metadata and no tags, one element of each array
-- per job: the typed form of job_copy_available_plain.sql, for executors on which a COPY of few
-- rows costs more than one statement (see Executor::min_copy_rows).
-- $1: each job's state (available or pending)
-- $2: each job's queue
-- $3: each job's kind
-- $4: each job's args
-- $5: each job's priority
-- $6: each job's max_attempts
INSERT INTO {schema}.pgmill_job (state, queue, kind, args, priority, max_attempts)
SELECT u.state::{schema}.pgmill_job_state, u.queue, u.kind, u.args, u.priority::smallint,
    u.max_attempts::smallint
FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::bigint[], $6::bigint[])
    AS u(state, queue, kind, args, priority, max_attempts)
