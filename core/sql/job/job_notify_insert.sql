-- Tells listening producers that jobs were inserted in some queues. Sent on the inserting
-- executor, so inside a transaction it is delivered at commit and never after a rollback.
-- $1: the insert channel, '<schema>.pgmill_insert'
-- $2: the queues to wake (one notification each; the payload is the queue name)
SELECT count(pg_notify($1::text, q)) AS num_notified
FROM unnest($2::text[]) AS q
