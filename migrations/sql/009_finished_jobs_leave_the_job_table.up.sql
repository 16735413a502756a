-- pgmill schema version 9: finished jobs leave the job table.
--
-- Up to version 8 a finished job stayed in pgmill_job until the cleaner deleted it: 24 hours for
-- a completed job by default, so the table held a day of finished rows beside the few that can
-- still run, and each job cost a dead tuple more when the cleaner's DELETE removed it. From
-- version 9, the statement that finishes a job moves it out:
--
-- * completed and cancelled jobs go to pgmill_job_done, the history: a ring of sixteen list
--   partitions, one per time slot (pgmill_storage.done_slot_seconds wide, two hours unless the
--   retention asks for wider). Retention empties a whole slot with TRUNCATE once every row in it
--   is past its retention: no DELETE, no dead tuple, the space handed back at once.
-- * discarded jobs go to pgmill_job_dead, the dead-letter queue, with the reason, until they are
--   redriven (back into pgmill_job under their own id) or pass the dead-letter retention.
--
-- A finished job stays in pgmill_job while something still needs it there: a unique job whose key
-- its final state keeps taken (the state is in its unique_states) stays until its retention, so
-- the unique index goes on seeing it.
--
-- The tables hold the job's columns as pgmill_job does (no claim token: a finished job has
-- none), so a job is found by id wherever it is, and moves between them keep every column.
--
-- Safe while version 8 clients run: this version only adds tables and a row. Version 8 clients
-- go on finishing jobs in pgmill_job; a version 9 leader moves those rows out in bounded batches,
-- and a version 8 leader's cleaner deletes them past their retention as before. Version 8
-- clients do not look in the new tables, so while they run their listings miss the jobs that
-- version 9 clients finished.

-- The storage settings every client reads: one row.
CREATE TABLE {schema}.pgmill_storage (
    name text PRIMARY KEY DEFAULT 'default',
    -- The width of one history slot; the ring is sixteen slots wide.
    done_slot_seconds integer NOT NULL DEFAULT 7200,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT name_is_default CHECK (name = 'default'),
    CONSTRAINT done_slot_seconds_positive CHECK (done_slot_seconds BETWEEN 60 AND 31536000)
);

INSERT INTO {schema}.pgmill_storage (name) VALUES ('default');

-- The slot of the history ring a job finished at `at` goes to, for slots `width` seconds wide.
CREATE FUNCTION {schema}.pgmill_job_done_slot(at timestamptz, width integer)
RETURNS smallint
LANGUAGE SQL
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT (pg_catalog.floor(pg_catalog.date_part('epoch', at) / width)::bigint % 16)::smallint;
$$;

CREATE TABLE {schema}.pgmill_job_done (
    id bigint NOT NULL,
    state {schema}.pgmill_job_state NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    metadata jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt smallint NOT NULL,
    max_attempts smallint NOT NULL,
    attempted_at timestamptz,
    attempted_by text[] NOT NULL,
    created_at timestamptz NOT NULL,
    scheduled_at timestamptz NOT NULL,
    finalized_at timestamptz NOT NULL,
    errors jsonb[] NOT NULL,
    tags text[] NOT NULL,
    unique_key bytea,
    unique_states bit(8),
    slot smallint NOT NULL,
    CONSTRAINT done_state CHECK (state IN ('completed', 'cancelled'))
) PARTITION BY LIST (slot);

CREATE TABLE {schema}.pgmill_job_done_00 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (0);
CREATE TABLE {schema}.pgmill_job_done_01 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (1);
CREATE TABLE {schema}.pgmill_job_done_02 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (2);
CREATE TABLE {schema}.pgmill_job_done_03 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (3);
CREATE TABLE {schema}.pgmill_job_done_04 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (4);
CREATE TABLE {schema}.pgmill_job_done_05 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (5);
CREATE TABLE {schema}.pgmill_job_done_06 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (6);
CREATE TABLE {schema}.pgmill_job_done_07 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (7);
CREATE TABLE {schema}.pgmill_job_done_08 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (8);
CREATE TABLE {schema}.pgmill_job_done_09 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (9);
CREATE TABLE {schema}.pgmill_job_done_10 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (10);
CREATE TABLE {schema}.pgmill_job_done_11 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (11);
CREATE TABLE {schema}.pgmill_job_done_12 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (12);
CREATE TABLE {schema}.pgmill_job_done_13 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (13);
CREATE TABLE {schema}.pgmill_job_done_14 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (14);
CREATE TABLE {schema}.pgmill_job_done_15 PARTITION OF {schema}.pgmill_job_done FOR VALUES IN (15);

-- Empties, with TRUNCATE, every slot of the history ring whose rows are all past their retention
-- (completed jobs finished before `completed_before`, cancelled ones before `cancelled_before`;
-- NULL keeps that state forever), except the slot `current_slot` being written; returns the slots
-- emptied. A slot is locked first and its rows checked after the lock is held, so no row a
-- writer adds meanwhile is removed with it: a slot that holds a younger row (a writer already
-- moved on to it, or the slot width changed and it holds rows of two laps) is left for a later
-- pass, and nothing is removed before its time. The lock waits for the slot's readers and
-- writers; `lock_wait_ms` bounds that wait (lock_timeout, for the rest of the calling
-- transaction), and a slot not locked in time is left for the next pass (the error is caught
-- here), so the readers and writers that queue behind the waiting lock never wait long.
CREATE FUNCTION {schema}.pgmill_job_done_truncate_expired(
    completed_before timestamptz,
    cancelled_before timestamptz,
    current_slot smallint,
    lock_wait_ms integer
) RETURNS SETOF smallint
LANGUAGE plpgsql
AS $$
DECLARE
    s smallint;
    part text;
    has_rows boolean;
    has_young boolean;
    young text := 'SELECT EXISTS (SELECT 1 FROM {schema}.%I AS d'
        ' WHERE (d.state = ''completed'' AND ($1 IS NULL OR d.finalized_at >= $1))'
        ' OR (d.state = ''cancelled'' AND ($2 IS NULL OR d.finalized_at >= $2)))';
BEGIN
    PERFORM pg_catalog.set_config('lock_timeout', lock_wait_ms::text || 'ms', true);
    FOR s IN 0..15 LOOP
        CONTINUE WHEN s = current_slot;
        part := pg_catalog.format('pgmill_job_done_%s', pg_catalog.lpad(s::text, 2, '0'));
        -- A look without the lock first, so that slots empty or still young are passed over
        -- without making their readers and writers wait.
        EXECUTE pg_catalog.format('SELECT EXISTS (SELECT 1 FROM {schema}.%I)', part)
            INTO has_rows;
        CONTINUE WHEN NOT has_rows;
        EXECUTE pg_catalog.format(young, part)
            INTO has_young USING completed_before, cancelled_before;
        CONTINUE WHEN has_young;
        BEGIN
            EXECUTE pg_catalog.format('LOCK TABLE {schema}.%I IN ACCESS EXCLUSIVE MODE', part);
            -- Under the lock, in a statement that started after it was taken: every row a
            -- writer committed to the slot is seen, and none can be added until the TRUNCATE
            -- commits.
            EXECUTE pg_catalog.format(young, part)
                INTO has_young USING completed_before, cancelled_before;
            IF NOT has_young THEN
                EXECUTE pg_catalog.format('TRUNCATE {schema}.%I', part);
                RETURN NEXT s;
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
END
$$;

-- A job by id, wherever in the ring it is.
CREATE INDEX pgmill_job_done_id_idx ON {schema}.pgmill_job_done (id);

-- Listing and counting by state and queue, as pgmill_job_state_queue_idx does in the job table.
CREATE INDEX pgmill_job_done_state_queue_idx ON {schema}.pgmill_job_done (state, queue, id);

-- Recent activity and retention: rows by when they finished. A BRIN index is a few pages however
-- many rows a slot holds, and rows arrive in finalized_at order.
CREATE INDEX pgmill_job_done_finalized_idx ON {schema}.pgmill_job_done USING brin (finalized_at);

CREATE TABLE {schema}.pgmill_job_dead (
    id bigint PRIMARY KEY,
    state {schema}.pgmill_job_state NOT NULL DEFAULT 'discarded',
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    metadata jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt smallint NOT NULL,
    max_attempts smallint NOT NULL,
    attempted_at timestamptz,
    attempted_by text[] NOT NULL,
    created_at timestamptz NOT NULL,
    scheduled_at timestamptz NOT NULL,
    finalized_at timestamptz NOT NULL,
    errors jsonb[] NOT NULL,
    tags text[] NOT NULL,
    unique_key bytea,
    unique_states bit(8),
    -- When the job entered the dead-letter queue, and why: its attempts were used up
    -- (max_attempts), its worker discarded it (discarded), it was rescued with no attempt left
    -- (rescued) or an operator moved it (manual).
    dead_at timestamptz NOT NULL DEFAULT now(),
    dead_reason text NOT NULL,
    -- How many times it was redriven before (its errors keep every attempt's).
    redrive_count integer NOT NULL DEFAULT 0,
    CONSTRAINT dead_state CHECK (state = 'discarded'),
    CONSTRAINT dead_reason_known CHECK (dead_reason IN ('max_attempts', 'discarded', 'rescued', 'manual'))
);

-- Listing, counting and redriving by queue, as in the job table; retention by age.
CREATE INDEX pgmill_job_dead_state_queue_idx ON {schema}.pgmill_job_dead (state, queue, id);
CREATE INDEX pgmill_job_dead_dead_at_idx ON {schema}.pgmill_job_dead (dead_at, id);

-- Every job wherever it is, for reading: the job table, the history and the dead-letter queue.
-- A job is in exactly one of them at every moment (each move writes and deletes in one
-- statement), so one statement's snapshot sees each job once. `stored_in` says where.
CREATE VIEW {schema}.pgmill_job_all AS
SELECT j.id, j.state, j.queue, j.kind, j.args, j.metadata, j.priority, j.attempt, j.max_attempts,
    j.attempted_at, j.attempted_by, j.created_at, j.scheduled_at, j.finalized_at, j.errors, j.tags,
    j.unique_key, j.unique_states, j.claim_token, NULL::timestamptz AS dead_at,
    NULL::text AS dead_reason, 0 AS redrive_count, 'job'::text AS stored_in
FROM {schema}.pgmill_job AS j
UNION ALL
SELECT d.id, d.state, d.queue, d.kind, d.args, d.metadata, d.priority, d.attempt, d.max_attempts,
    d.attempted_at, d.attempted_by, d.created_at, d.scheduled_at, d.finalized_at, d.errors, d.tags,
    d.unique_key, d.unique_states, NULL::bigint AS claim_token, NULL::timestamptz AS dead_at,
    NULL::text AS dead_reason, 0 AS redrive_count, 'done'::text AS stored_in
FROM {schema}.pgmill_job_done AS d
UNION ALL
SELECT x.id, x.state, x.queue, x.kind, x.args, x.metadata, x.priority, x.attempt, x.max_attempts,
    x.attempted_at, x.attempted_by, x.created_at, x.scheduled_at, x.finalized_at, x.errors, x.tags,
    x.unique_key, x.unique_states, NULL::bigint AS claim_token, x.dead_at, x.dead_reason,
    x.redrive_count, 'dead'::text AS stored_in
FROM {schema}.pgmill_job_dead AS x;
