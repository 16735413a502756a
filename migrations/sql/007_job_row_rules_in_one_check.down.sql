-- Reverts version 7: the job table's nine constraints back as version 6 left them, validated.
-- Every row already follows their rules (version 7's constraint held the same ones), so the
-- validation finds nothing; it scans the table under this transaction's exclusive lock.

ALTER TABLE {schema}.pgmill_job
    ADD CONSTRAINT finalized_at_iff_final CHECK (
        (state IN ('completed', 'cancelled', 'discarded')) = (finalized_at IS NOT NULL)
    ),
    ADD CONSTRAINT priority_in_range CHECK (priority BETWEEN 1 AND 4),
    ADD CONSTRAINT queue_length CHECK (char_length(queue) BETWEEN 1 AND 128),
    ADD CONSTRAINT kind_length CHECK (char_length(kind) BETWEEN 1 AND 128),
    ADD CONSTRAINT max_attempts_positive CHECK (max_attempts > 0),
    ADD CONSTRAINT attempt_not_negative CHECK (attempt >= 0),
    ADD CONSTRAINT args_is_object_or_array CHECK (jsonb_typeof(args) IN ('object', 'array')),
    ADD CONSTRAINT metadata_is_object CHECK (jsonb_typeof(metadata) = 'object'),
    ADD CONSTRAINT queue_name CHECK (queue ~ '^[A-Za-z0-9_.:/-]+$');

ALTER TABLE {schema}.pgmill_job DROP CONSTRAINT row_is_valid;

DROP FUNCTION {schema}.pgmill_job_row_is_valid(
    {schema}.pgmill_job_state, timestamptz, text, text, jsonb, jsonb, smallint, smallint, smallint
);
