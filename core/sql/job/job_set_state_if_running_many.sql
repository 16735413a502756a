-- Records the outcomes of many attempts in one statement. Fencing: a row changes only while it is
-- still running the claim the outcome belongs to (its attempt and its fencing token; the token is
-- never reused, even when the attempt number is given back), so a superseded claim's late result
-- changes nothing (its id is missing from the result). The token is cleared: the claim is over.
-- A job an operator asked to cancel while it ran (metadata.cancel_attempted_at) ends cancelled
-- instead of being retried, snoozed or interrupted.
-- Jobs of periodic schedules (metadata.periodic) also update their schedule's statistics.
-- $1: job ids
-- $2: the attempt each outcome belongs to
-- $3: outcome: completed, retry, discard, cancel, snooze or interrupt
-- $4: delay in microseconds for retry and snooze (ignored otherwise)
-- $5: error to append (a JSON object; its "at" is set to now()), or JSON null for none
-- $6: delays up to this many microseconds make the job available at once instead of
--     retryable or scheduled (it still waits for its scheduled_at)
-- $7: the fencing token of the claim each outcome belongs to
WITH updated AS (
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
    END,
    claim_token = NULL
FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::jsonb[], $7::bigint[])
    AS o(id, attempt, outcome, delay_us, error, claim_token)
-- state compared as text on purpose: with `state = 'running'` a cached generic plan matches the
-- partial index pgmill_job_running_idx and scans all of it for every outcome instead of looking
-- each row up by primary key.
WHERE j.id = o.id AND j.state::text = 'running' AND j.attempt = o.attempt
    AND j.claim_token = o.claim_token
RETURNING j.id AS id, j.state::text AS state, j.attempt AS attempt,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at,
    j.metadata->>'periodic' AS periodic
),
-- Statistics of periodic jobs whose run just ended: completed is a success, discarded or cancelled
-- a failure. Aggregated per schedule, so each row is updated once per statement; concurrent
-- completers serialise on the row lock.
periodic_runs AS (
    SELECT periodic AS name,
        count(*) FILTER (WHERE state = 'completed') AS successes,
        count(*) FILTER (WHERE state IN ('discarded', 'cancelled')) AS failures
    FROM updated
    WHERE periodic IS NOT NULL AND state IN ('completed', 'discarded', 'cancelled')
    GROUP BY periodic
),
periodic_stats AS (
    UPDATE {schema}.pgmill_periodic AS p
    SET success_count = p.success_count + r.successes,
        failure_count = p.failure_count + r.failures,
        last_success_at = CASE WHEN r.successes > 0 THEN now() ELSE p.last_success_at END,
        last_failure_at = CASE WHEN r.failures > 0 THEN now() ELSE p.last_failure_at END,
        consecutive_failures = CASE
            WHEN r.successes > 0 THEN 0
            ELSE p.consecutive_failures + r.failures
        END,
        updated_at = now()
    FROM periodic_runs AS r
    WHERE p.name = r.name
    RETURNING p.name
)
SELECT id, state, attempt, scheduled_at, finalized_at
FROM updated
