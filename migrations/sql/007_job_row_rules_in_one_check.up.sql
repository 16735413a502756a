-- pgmill schema version 7: the job table's row rules in one constraint, cheaper per statement.
--
-- Postgres rebuilds a table's CHECK expressions from their stored text in every statement that
-- writes a row, before it checks the first one. Versions 1 to 6 held pgmill_job's rules in nine
-- constraints, whose rebuilding was close to half of a one-row INSERT's server work (callgrind of
-- a PostgreSQL 15 backend), paid again by every claim and every completion batch. This version
-- holds the same rules in one constraint calling a PL/pgSQL function, compiled once per session: a
-- one-row INSERT costs the backend about a quarter less. Each row then pays for the call, which the
-- rows of the default queue get back by skipping the regular expression (their name is known to
-- follow the rule): a statement writing many rows costs what it did for them. For other queues
-- statements of more than about 50 rows pay a little more than before (a few per cent per row) and
-- every smaller one less.
--
-- A row breaking a rule is refused with SQLSTATE 23514 as before, and the error names the rule
-- by the name its own constraint had (priority_in_range, queue_name, ...), with a detail saying
-- what is wrong.
--
-- Safe while version 6 clients run: they only write rows that follow the rules. The new
-- constraint is added NOT VALID (the table's lock is held only for a moment, no scan) before the
-- old ones are dropped, so no moment lets a bad row in; version 8 validates it without blocking
-- writes.
--
-- The function names its built-in functions and operators through pg_catalog where a session's
-- search_path could otherwise choose another: its body is read in the sessions that write jobs.

CREATE FUNCTION {schema}.pgmill_job_row_is_valid(
    state {schema}.pgmill_job_state,
    finalized_at timestamptz,
    queue text,
    kind text,
    args jsonb,
    metadata jsonb,
    priority smallint,
    attempt smallint,
    max_attempts smallint
) RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $$
DECLARE
    violated text;
    detail text;
BEGIN
    IF (state IN ('completed', 'cancelled', 'discarded')) = (finalized_at IS NOT NULL)
        AND priority BETWEEN 1 AND 4
        AND (
            queue = 'default'
            OR pg_catalog.char_length(queue) BETWEEN 1 AND 128
                AND queue OPERATOR(pg_catalog.~) '^[A-Za-z0-9_.:/-]+$'
        )
        AND pg_catalog.char_length(kind) BETWEEN 1 AND 128
        AND max_attempts > 0
        AND attempt >= 0
        AND pg_catalog.jsonb_typeof(args) IN ('object', 'array')
        AND pg_catalog.jsonb_typeof(metadata) = 'object'
    THEN
        RETURN true;
    END IF;
    -- Which rule, for the error: the first one broken, in the order version 1 listed them, the
    -- queue's characters (version 3's rule) last.
    IF (state IN ('completed', 'cancelled', 'discarded')) <> (finalized_at IS NOT NULL) THEN
        violated := 'finalized_at_iff_final';
        detail := pg_catalog.format(
            'a %s job %s finalized_at: it is set exactly when the job is completed, cancelled or discarded',
            state, CASE WHEN finalized_at IS NULL THEN 'needs' ELSE 'must not have' END);
    ELSIF NOT (priority BETWEEN 1 AND 4) THEN
        violated := 'priority_in_range';
        detail := pg_catalog.format('priority %s is not between 1 and 4', priority);
    ELSIF NOT (pg_catalog.char_length(queue) BETWEEN 1 AND 128) THEN
        violated := 'queue_length';
        detail := pg_catalog.format(
            'queue is %s characters long, not 1 to 128', pg_catalog.char_length(queue));
    ELSIF NOT (pg_catalog.char_length(kind) BETWEEN 1 AND 128) THEN
        violated := 'kind_length';
        detail := pg_catalog.format(
            'kind is %s characters long, not 1 to 128', pg_catalog.char_length(kind));
    ELSIF NOT (max_attempts > 0) THEN
        violated := 'max_attempts_positive';
        detail := pg_catalog.format('max_attempts %s is not positive', max_attempts);
    ELSIF NOT (attempt >= 0) THEN
        violated := 'attempt_not_negative';
        detail := pg_catalog.format('attempt %s is negative', attempt);
    ELSIF NOT (pg_catalog.jsonb_typeof(args) IN ('object', 'array')) THEN
        violated := 'args_is_object_or_array';
        detail := pg_catalog.format(
            'args is a JSON %s, not an object or an array', pg_catalog.jsonb_typeof(args));
    ELSIF NOT (pg_catalog.jsonb_typeof(metadata) = 'object') THEN
        violated := 'metadata_is_object';
        detail := pg_catalog.format(
            'metadata is a JSON %s, not an object', pg_catalog.jsonb_typeof(metadata));
    ELSIF NOT (queue OPERATOR(pg_catalog.~) '^[A-Za-z0-9_.:/-]+$') THEN
        violated := 'queue_name';
        detail := pg_catalog.format(
            'queue %L has characters other than ASCII letters, digits and _ - . : /', queue);
    ELSE
        -- Only a NULL in a column Postgres already holds NOT NULL gets here: a plain violation.
        RETURN false;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'check_violation',
        MESSAGE = pg_catalog.format(
            'new row for relation "pgmill_job" violates check constraint "%s"', violated),
        DETAIL = detail,
        CONSTRAINT = violated,
        TABLE = 'pgmill_job';
END
$$;

ALTER TABLE {schema}.pgmill_job
    ADD CONSTRAINT row_is_valid CHECK ({schema}.pgmill_job_row_is_valid(
        state, finalized_at, queue, kind, args, metadata, priority, attempt, max_attempts
    )) NOT VALID;

ALTER TABLE {schema}.pgmill_job
    DROP CONSTRAINT finalized_at_iff_final,
    DROP CONSTRAINT priority_in_range,
    DROP CONSTRAINT queue_length,
    DROP CONSTRAINT kind_length,
    DROP CONSTRAINT max_attempts_positive,
    DROP CONSTRAINT attempt_not_negative,
    DROP CONSTRAINT args_is_object_or_array,
    DROP CONSTRAINT metadata_is_object,
    DROP CONSTRAINT queue_name;
