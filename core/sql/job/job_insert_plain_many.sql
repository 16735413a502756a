-- Inserts jobs due now (or pending) that carry no metadata and no tags, one element of each array
-- per job: the typed form of job_copy_available_plain.sql, for executors on which a COPY of few
-- rows costs more than one statement (see Executor::min_copy_rows). Jobs that share their state,
-- queue, priority and max_attempts go by job_insert_plain_alike.sql instead.
-- The args go as JSON text, written straight from each job's value; the server parses them as
-- it parses a jsonb value.
-- $1: each job's state (available or pending)
-- $2: each job's queue
-- $3: each job's kind
-- $4: each job's args, as JSON text
-- $5: each job's priority
-- $6: each job's max_attempts
INSERT INTO {schema}.pgmill_job (state, queue, kind, args, priority, max_attempts)
SELECT u.state::{schema}.pgmill_job_state, u.queue, u.kind, u.args::jsonb, u.priority::smallint,
    u.max_attempts::smallint
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[])
    AS u(state, queue, kind, args, priority, max_attempts)
