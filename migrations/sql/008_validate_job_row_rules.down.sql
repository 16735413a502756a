-- Reverts version 8: the row constraint back as version 7 left it, not validated.

ALTER TABLE {schema}.pgmill_job DROP CONSTRAINT row_is_valid;

ALTER TABLE {schema}.pgmill_job
    ADD CONSTRAINT row_is_valid CHECK ({schema}.pgmill_job_row_is_valid(
        state, finalized_at, queue, kind, args, metadata, priority, attempt, max_attempts
    )) NOT VALID;
