-- pgmill schema version 3: job queue names follow the API's name rule (1 to 128 ASCII letters,
-- digits and '_', '-', '.', ':', '/'), so a row inserted by SQL cannot sit in a queue no client
-- could ever serve.
--
-- Safe while version 2 clients run: they only ever write names that follow the rule (their API
-- validates every name). Rows that break it already are kept, not lost: they move to the queue
-- 'pgmill:invalid' with their original name in metadata ('invalid_queue'), where they show up as
-- an unserved queue with counts (Client::queue_list_unserved, `pgmill queue unserved`) for an
-- operator to look at, retry into a real queue or delete. The constraint is added NOT VALID, which
-- takes the table's lock only for a moment; version 4 validates it without blocking writes.

UPDATE {schema}.pgmill_job
SET metadata = metadata || jsonb_build_object('invalid_queue', queue),
    queue = 'pgmill:invalid'
WHERE queue !~ '^[A-Za-z0-9_.:/-]{1,128}$';

ALTER TABLE {schema}.pgmill_job
    ADD CONSTRAINT queue_name CHECK (queue ~ '^[A-Za-z0-9_.:/-]{1,128}$') NOT VALID;
