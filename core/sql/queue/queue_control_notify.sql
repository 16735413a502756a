-- Broadcasts a control message (pause, resume, cancel) to every client of the schema.
-- $1: the control channel, '<schema>.pgmill_control'
-- $2: the message, JSON text
SELECT count(pg_notify($1::text, $2::text)) AS num_notified
