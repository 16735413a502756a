-- Reverts version 10: drops the queue statistics. Clients of earlier versions never used them;
-- version 10 clients' leader then logs a warning at each rollup pass, and the dashboard's charts
-- fail, until the version is applied again.

DROP TABLE {schema}.pgmill_queue_stat;
