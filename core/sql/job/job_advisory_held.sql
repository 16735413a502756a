-- How many advisory locks this session holds, and the server's lock table size (the objects its
-- shared lock table is sized for: max_locks_per_transaction times the connections and prepared
-- transactions it allows). Run on the locker session: a check that it is alive, and the budget's
-- yardstick.
SELECT (SELECT count(*) FROM pg_locks
        WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted) AS held,
    current_setting('max_locks_per_transaction')::bigint
        * (current_setting('max_connections')::bigint
            + current_setting('max_prepared_transactions')::bigint) AS lock_table
