-- Every retention rule, by queue ('*' for every queue) and state.
SELECT r.queue AS queue, r.state::text AS state, r.keep_seconds AS keep_seconds,
    r.updated_at AS updated_at
FROM {schema}.pgmill_retention AS r
ORDER BY r.queue, r.state
