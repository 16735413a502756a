-- Bulk insert by COPY of jobs due now (or pending) with no metadata and no tags: those two
-- columns take their defaults, so the server parses no JSON or array for them.
COPY {schema}.pgmill_job (state, queue, kind, args, priority, max_attempts) FROM STDIN
