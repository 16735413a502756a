-- Records the outcomes of many attempts in one statement. Fencing: a row changes only while it is
-- still running the attempt the outcome belongs to, so a superseded attempt's late result changes
-- nothing (its id is missing from the result). A job an operator asked to cancel while it ran
-- (metadata.cancel_attempted_at) ends cancelled instead of being retried, snoozed or interrupted.
-- $1: job ids
-- $2: the attempt each outcome belongs to
-- $3: outcome: completed, retry, discard, cancel, snooze or interrupt
-- $4: delay in microseconds for retry and snooze (ignored otherwise)
-- $5: error to append (a JSON object; its "at" is set to now()), or JSON null for none
-- $6: delays up to this many microseconds make the job available at once instead of
--     retryable or scheduled (it still waits for its scheduled_at)
UPDATE {schema}.pgmill_job AS j
SET state = (CASE
        WHEN o.outcome = 'completed' THEN 'completed'
        WHEN o.outcome = 'cancel' THEN 'cancelled'
        WHEN o.outcome = 'discard' THEN 'discarded'
        WHEN j.metadata ? 'cancel_attempted_at' THEN 'cancelled'
        WHEN o.outcome = 'retry' AND j.attempt >= j.max_attempts THEN 'discarded'
        WHEN o.outcome = 'retry' AND o.delay_us > $6::bigint THEN 'retryable'
        WHEN o.outcome = 'snooze' AND o.delay_us > $6::bigint THEN 'scheduled'
        ELSE 'available'
    END)::{schema}.pgmill_job_state,
    finalized_at = CASE
        WHEN o.outcome IN ('completed', 'cancel', 'discard')
            OR j.metadata ? 'cancel_attempted_at'
            OR (o.outcome = 'retry' AND j.attempt >= j.max_attempts) THEN now()
    END,
    scheduled_at = CASE
        WHEN o.outcome IN ('retry', 'snooze') AND NOT (j.metadata ? 'cancel_attempted_at')
            THEN now() + o.delay_us * interval '1 microsecond'
        ELSE j.scheduled_at
    END,
    attempt = CASE
        WHEN o.outcome IN ('snooze', 'interrupt') AND NOT (j.metadata ? 'cancel_attempted_at')
            THEN j.attempt - 1
        ELSE j.attempt
    END,
    errors = CASE
        WHEN jsonb_typeof(o.error) = 'object'
            THEN array_append(j.errors, o.error || jsonb_build_object('at', now()))
        ELSE j.errors
    END
FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::jsonb[])
    AS o(id, attempt, outcome, delay_us, error)
WHERE j.id = o.id AND j.state = 'running' AND j.attempt = o.attempt
RETURNING j.id AS id, j.state::text AS state, j.attempt AS attempt,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at
