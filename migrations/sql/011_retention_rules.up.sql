-- pgmill schema version 11: retention rules kept in the database.
--
-- How long finished jobs are kept was each client's configuration only; a rule stored here wins
-- over it, so an operator changes retention without a deploy, and every client leading in turn
-- applies the same rule. A rule is per final state (completed, cancelled, discarded) and either
-- per queue or for every queue ('*'); a queue's own rule wins over the one for every queue. A NULL
-- keep_seconds keeps jobs forever.
--
-- Safe while version 10 clients run: a new table they never read. A version 10 leader applies its
-- own configuration, as before, until a version 11 client leads.

CREATE TABLE {schema}.pgmill_retention (
    queue text NOT NULL,
    state {schema}.pgmill_job_state NOT NULL,
    keep_seconds bigint,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, state),
    CONSTRAINT retention_state_is_final CHECK (state IN ('completed', 'cancelled', 'discarded')),
    CONSTRAINT keep_seconds_positive CHECK (keep_seconds IS NULL OR keep_seconds > 0),
    CONSTRAINT queue_length CHECK (char_length(queue) BETWEEN 1 AND 128)
);
