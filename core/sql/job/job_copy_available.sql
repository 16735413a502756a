-- Bulk insert of jobs due now (or pending) by COPY; rows in text format, columns in this order.
COPY {schema}.pgmill_job (state, queue, kind, args, metadata, priority, max_attempts, tags) FROM STDIN
