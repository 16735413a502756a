-- Reverts version 3: drops the queue name constraint and gives the jobs it moved their names back.

ALTER TABLE {schema}.pgmill_job DROP CONSTRAINT queue_name;

UPDATE {schema}.pgmill_job
SET queue = metadata->>'invalid_queue',
    metadata = metadata - 'invalid_queue'
WHERE queue = 'pgmill:invalid' AND metadata ? 'invalid_queue';
