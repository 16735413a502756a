-- Broadcasts control messages (pause, resume, cancel) to every client of the schema, in order.
-- $1: the control channel, '<schema>.pgmill_control'
-- $2: the messages, each JSON text
SELECT count(pg_notify($1::text, m.message)) AS num_notified
FROM unnest($2::text[]) AS m(message)
