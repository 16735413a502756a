-- Inserts jobs due now (or pending) that carry no metadata and no tags and share their state,
-- queue, priority and max_attempts (a bulk insert's usual shape): job_insert_plain_many.sql with
-- those four sent once rather than once per job, so neither side encodes, parses or unnests
-- them per row.
-- The args go as JSON text, written straight from each job's value; the server parses them as
-- it parses a jsonb value.
-- $1: the jobs' state (available or pending)
-- $2: the jobs' queue
-- $3: each job's kind
-- $4: each job's args, as JSON text
-- $5: the jobs' priority
-- $6: the jobs' max_attempts
INSERT INTO {schema}.pgmill_job (state, queue, kind, args, priority, max_attempts)
SELECT $1::text::{schema}.pgmill_job_state, $2::text, u.kind, u.args::jsonb, $5::smallint,
    $6::smallint
FROM unnest($3::text[], $4::text[]) AS u(kind, args)
