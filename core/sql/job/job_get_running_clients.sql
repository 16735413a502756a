-- The clients named as the current attempter of running jobs that have no client row.
SELECT DISTINCT j.attempted_by[cardinality(j.attempted_by)] AS client_id
FROM {schema}.pgmill_job AS j
WHERE j.state = 'running'
    AND NOT EXISTS (
        SELECT 1 FROM {schema}.pgmill_client AS c
        WHERE c.id = j.attempted_by[cardinality(j.attempted_by)]
    )
