-- Records the outcomes of many attempts in one statement. Fencing: a row changes only while it is
-- still running the claim the outcome belongs to (its attempt and its fencing token; the token is
-- never reused, even when the attempt number is given back), so a superseded claim's late result
-- changes nothing (its id is missing from the result). The token is cleared: the claim is over.
-- A job an operator asked to cancel while it ran (metadata.cancel_attempted_at) ends cancelled
-- instead of being retried, snoozed or interrupted.
-- A job that finishes leaves the job table: completed and cancelled jobs go to the history
-- (pgmill_job_done, in the ring slot of this statement's now()), discarded ones to the
-- dead-letter queue (pgmill_job_dead, with the reason: max_attempts when its attempts ran out,
-- discarded when its worker discarded it). One that must stay stays, finished, in pgmill_job: a
-- unique job whose key its final state keeps taken (the state is in its unique_states), so the
-- unique index goes on seeing it. Every new value is decided once, on the locked rows (`decided`),
-- and each row is then updated in place, or written to its new table and deleted, in this one
-- statement: a job is in exactly one table at every moment.
-- Jobs of periodic schedules (metadata.periodic) also update their schedule's statistics.
-- $1: job ids
-- $2: the attempt each outcome belongs to
-- $3: outcome: completed, retry, discard, cancel, snooze or interrupt
-- $4: delay in microseconds for retry and snooze (ignored otherwise)
-- $5: error to append (a JSON object; its "at" is set to now()), or JSON null for none
-- $6: delays up to this many microseconds make the job available at once instead of
--     retryable or scheduled (it still waits for its scheduled_at)
-- $7: the fencing token of the claim each outcome belongs to
-- $8: the rewind channel, or NULL to announce nothing: each queue's earliest interrupted job
--     (available again at its old place, behind where producers claim from) is announced
WITH outcome AS (
    SELECT j.*, o.outcome AS outcome_kind, o.delay_us AS delay_us, o.error AS error,
        j.metadata ? 'cancel_attempted_at' AS cancel_asked
    FROM {schema}.pgmill_job AS j
    JOIN unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::jsonb[], $7::bigint[])
        AS o(id, attempt, outcome, delay_us, error, claim_token) ON j.id = o.id
    WHERE j.state::text = 'running' AND j.attempt = o.attempt AND j.claim_token = o.claim_token
    FOR UPDATE OF j
),
decided AS (
    SELECT o.*,
        (CASE
            WHEN o.outcome_kind = 'completed' THEN 'completed'
            WHEN o.outcome_kind = 'cancel' THEN 'cancelled'
            WHEN o.outcome_kind = 'discard' THEN 'discarded'
            WHEN o.cancel_asked THEN 'cancelled'
            WHEN o.outcome_kind = 'retry' AND o.attempt >= o.max_attempts THEN 'discarded'
            WHEN o.outcome_kind = 'retry' AND o.delay_us > $6::bigint THEN 'retryable'
            WHEN o.outcome_kind = 'snooze' AND o.delay_us > $6::bigint THEN 'scheduled'
            ELSE 'available'
        END)::{schema}.pgmill_job_state AS new_state,
        CASE
            WHEN o.outcome_kind IN ('retry', 'snooze') AND NOT o.cancel_asked
                THEN now() + o.delay_us * interval '1 microsecond'
            ELSE o.scheduled_at
        END AS new_scheduled_at,
        CASE
            WHEN o.outcome_kind IN ('snooze', 'interrupt') AND NOT o.cancel_asked
                THEN o.attempt - 1
            ELSE o.attempt
        END AS new_attempt,
        CASE
            WHEN jsonb_typeof(o.error) = 'object'
                THEN array_append(o.errors, o.error || jsonb_build_object('at', now()))
            ELSE o.errors
        END AS new_errors,
        CASE WHEN o.outcome_kind = 'discard' THEN 'discarded' ELSE 'max_attempts' END
            AS dead_reason
    FROM outcome AS o
),
placed AS (
    SELECT d.*,
        d.new_state IN ('completed', 'cancelled', 'discarded') AS final,
        d.new_state IN ('completed', 'cancelled', 'discarded')
            AND NOT (d.unique_key IS NOT NULL AND d.unique_states IS NOT NULL
                AND {schema}.pgmill_job_state_in_bitmask(d.unique_states, d.new_state))
            AS leaves
    FROM decided AS d
),
kept AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = p.new_state,
        finalized_at = CASE WHEN p.final THEN now() END,
        scheduled_at = p.new_scheduled_at,
        attempt = p.new_attempt,
        errors = p.new_errors,
        claim_token = NULL
    FROM placed AS p
    WHERE j.id = p.id AND NOT p.leaves
    RETURNING j.id, j.state, j.attempt, j.scheduled_at, j.finalized_at
),
rewound AS (
    SELECT count(pg_notify($8::text, r.queue || E'\t' || r.priority || E'\t'
        || (extract(epoch FROM r.new_scheduled_at) * 1000000)::bigint || E'\t' || r.id))
        AS num_rewinds
    FROM (
        SELECT DISTINCT ON (p.queue) p.queue, p.priority, p.new_scheduled_at, p.id
        FROM placed AS p
        WHERE p.outcome_kind = 'interrupt' AND p.new_state = 'available'
        ORDER BY p.queue, p.priority, p.new_scheduled_at, p.id
    ) AS r
    WHERE $8::text IS NOT NULL
),
gone AS (
    DELETE FROM {schema}.pgmill_job AS j
    USING placed AS p
    WHERE j.id = p.id AND p.leaves
),
done AS (
    INSERT INTO {schema}.pgmill_job_done (id, state, queue, kind, args, metadata, priority,
        attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at,
        errors, tags, unique_key, unique_states, slot)
    SELECT p.id, p.new_state, p.queue, p.kind, p.args, p.metadata, p.priority, p.new_attempt,
        p.max_attempts, p.attempted_at, p.attempted_by, p.created_at, p.new_scheduled_at, now(),
        p.new_errors, p.tags, p.unique_key, p.unique_states,
        {schema}.pgmill_job_done_slot(now(), (SELECT s.done_slot_seconds
            FROM {schema}.pgmill_storage AS s WHERE s.name = 'default'))
    FROM placed AS p
    WHERE p.leaves AND p.new_state IN ('completed', 'cancelled')
    RETURNING id, state, attempt, scheduled_at, finalized_at
),
dead AS (
    INSERT INTO {schema}.pgmill_job_dead (id, state, queue, kind, args, metadata, priority,
        attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at,
        errors, tags, unique_key, unique_states, dead_reason)
    SELECT p.id, p.new_state, p.queue, p.kind, p.args, p.metadata, p.priority, p.new_attempt,
        p.max_attempts, p.attempted_at, p.attempted_by, p.created_at, p.new_scheduled_at, now(),
        p.new_errors, p.tags, p.unique_key, p.unique_states, p.dead_reason
    FROM placed AS p
    WHERE p.leaves AND p.new_state = 'discarded'
    RETURNING id, state, attempt, scheduled_at, finalized_at
),
periodic_runs AS (
    SELECT p.metadata->>'periodic' AS name,
        count(*) FILTER (WHERE p.new_state = 'completed') AS successes,
        count(*) FILTER (WHERE p.new_state IN ('discarded', 'cancelled')) AS failures
    FROM placed AS p
    WHERE p.metadata ? 'periodic' AND p.final
    GROUP BY p.metadata->>'periodic'
),
periodic_stats AS (
    UPDATE {schema}.pgmill_periodic AS s
    SET success_count = s.success_count + r.successes,
        failure_count = s.failure_count + r.failures,
        last_success_at = CASE WHEN r.successes > 0 THEN now() ELSE s.last_success_at END,
        last_failure_at = CASE WHEN r.failures > 0 THEN now() ELSE s.last_failure_at END,
        consecutive_failures = CASE
            WHEN r.successes > 0 THEN 0
            ELSE s.consecutive_failures + r.failures
        END,
        updated_at = now()
    FROM periodic_runs AS r
    WHERE s.name = r.name
    RETURNING s.name
)
SELECT r.id AS id, r.state::text AS state, r.attempt AS attempt, r.scheduled_at AS scheduled_at,
    r.finalized_at AS finalized_at
FROM (
    SELECT k.id, k.state, k.attempt, k.scheduled_at, k.finalized_at FROM kept AS k
    CROSS JOIN rewound
    UNION ALL
    SELECT id, state, attempt, scheduled_at, finalized_at FROM done
    UNION ALL
    SELECT id, state, attempt, scheduled_at, finalized_at FROM dead
) AS r
