-- pgmill schema version 1: jobs, queues, leadership, clients, periodic jobs, migrations.

CREATE SCHEMA IF NOT EXISTS {schema};

CREATE TABLE {schema}.pgmill_migration (
    line text NOT NULL,
    version bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (line, version),
    CONSTRAINT line_length CHECK (char_length(line) BETWEEN 1 AND 128),
    CONSTRAINT version_positive CHECK (version >= 1)
);

CREATE TYPE {schema}.pgmill_job_state AS ENUM (
    'available',
    'scheduled',
    'pending',
    'running',
    'retryable',
    'completed',
    'cancelled',
    'discarded'
);

-- True when `state` is one of the states set in `mask` (bit 0 = available ... bit 7 = discarded).
CREATE FUNCTION {schema}.pgmill_job_state_in_bitmask(mask bit(8), state {schema}.pgmill_job_state)
RETURNS boolean
LANGUAGE SQL
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT CASE state
        WHEN 'available' THEN get_bit(mask, 7)
        WHEN 'scheduled' THEN get_bit(mask, 6)
        WHEN 'pending' THEN get_bit(mask, 5)
        WHEN 'running' THEN get_bit(mask, 4)
        WHEN 'retryable' THEN get_bit(mask, 3)
        WHEN 'completed' THEN get_bit(mask, 2)
        WHEN 'cancelled' THEN get_bit(mask, 1)
        WHEN 'discarded' THEN get_bit(mask, 0)
        ELSE 0
    END = 1;
$$;

CREATE TABLE {schema}.pgmill_job (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    state {schema}.pgmill_job_state NOT NULL DEFAULT 'available',
    queue text NOT NULL DEFAULT 'default',
    kind text NOT NULL,
    args jsonb NOT NULL DEFAULT '{}',
    metadata jsonb NOT NULL DEFAULT '{}',
    priority smallint NOT NULL DEFAULT 1,
    attempt smallint NOT NULL DEFAULT 0,
    max_attempts smallint NOT NULL DEFAULT 25,
    attempted_at timestamptz,
    attempted_by text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    scheduled_at timestamptz NOT NULL DEFAULT now(),
    finalized_at timestamptz,
    errors jsonb[] NOT NULL DEFAULT '{}',
    tags text[] NOT NULL DEFAULT '{}',
    unique_key bytea,
    unique_states bit(8),
    CONSTRAINT finalized_at_iff_final CHECK (
        (state IN ('completed', 'cancelled', 'discarded')) = (finalized_at IS NOT NULL)
    ),
    CONSTRAINT priority_in_range CHECK (priority BETWEEN 1 AND 4),
    CONSTRAINT queue_length CHECK (char_length(queue) BETWEEN 1 AND 128),
    CONSTRAINT kind_length CHECK (char_length(kind) BETWEEN 1 AND 128),
    CONSTRAINT max_attempts_positive CHECK (max_attempts > 0),
    CONSTRAINT attempt_not_negative CHECK (attempt >= 0),
    CONSTRAINT args_is_object_or_array CHECK (jsonb_typeof(args) IN ('object', 'array')),
    CONSTRAINT metadata_is_object CHECK (jsonb_typeof(metadata) = 'object')
);

-- Fetching: the next available jobs of a queue in priority, schedule, id order.
CREATE INDEX pgmill_job_fetch_idx ON {schema}.pgmill_job (queue, priority, scheduled_at, id)
    WHERE state = 'available';

-- Scheduling: scheduled and retryable jobs that come due.
CREATE INDEX pgmill_job_schedule_idx ON {schema}.pgmill_job (scheduled_at, id)
    WHERE state IN ('scheduled', 'retryable');

-- Rescuing: running jobs by when they were attempted.
CREATE INDEX pgmill_job_running_idx ON {schema}.pgmill_job (attempted_at, id)
    WHERE state = 'running';

-- Cleaning: finalized jobs by state and age.
CREATE INDEX pgmill_job_finalized_idx ON {schema}.pgmill_job (state, finalized_at, id)
    WHERE finalized_at IS NOT NULL;

-- Listing and counting by state and queue.
CREATE INDEX pgmill_job_state_queue_idx ON {schema}.pgmill_job (state, queue, id);

-- Uniqueness: one job per key while in one of its unique states.
CREATE UNIQUE INDEX pgmill_job_unique_idx ON {schema}.pgmill_job (unique_key)
    WHERE unique_key IS NOT NULL
        AND unique_states IS NOT NULL
        AND {schema}.pgmill_job_state_in_bitmask(unique_states, state);

CREATE TABLE {schema}.pgmill_queue (
    name text PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    paused_at timestamptz,
    metadata jsonb NOT NULL DEFAULT '{}',
    CONSTRAINT name_length CHECK (char_length(name) BETWEEN 1 AND 128)
);

-- One row per schema: the current leader's lease. UNLOGGED: a crash empties it, which only
-- triggers a new election.
CREATE UNLOGGED TABLE {schema}.pgmill_leader (
    name text PRIMARY KEY DEFAULT 'default',
    leader_id text NOT NULL,
    elected_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    CONSTRAINT name_is_default CHECK (name = 'default'),
    CONSTRAINT leader_id_length CHECK (char_length(leader_id) BETWEEN 1 AND 128),
    CONSTRAINT expires_after_elected CHECK (expires_at > elected_at)
);

-- One row per running client. UNLOGGED on purpose: after a crash restart or a failover it is
-- empty, which is how a client learns the database restarted under it.
CREATE UNLOGGED TABLE {schema}.pgmill_client (
    id text PRIMARY KEY,
    hostname text NOT NULL,
    pid integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    metadata jsonb NOT NULL DEFAULT '{}',
    CONSTRAINT id_length CHECK (char_length(id) BETWEEN 1 AND 128)
);

CREATE TABLE {schema}.pgmill_periodic (
    name text PRIMARY KEY,
    schedule text NOT NULL,
    next_run_at timestamptz NOT NULL,
    paused boolean NOT NULL DEFAULT false,
    last_run_at timestamptz,
    last_job_id bigint,
    last_success_at timestamptz,
    last_failure_at timestamptz,
    run_count bigint NOT NULL DEFAULT 0,
    success_count bigint NOT NULL DEFAULT 0,
    failure_count bigint NOT NULL DEFAULT 0,
    consecutive_failures integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT name_length CHECK (char_length(name) BETWEEN 1 AND 128)
);
