-- Pauses or resumes a periodic job; returns its name if it exists.
-- $1: name
-- $2: true to pause, false to resume
UPDATE {schema}.pgmill_periodic AS p
SET paused = $2::boolean, updated_at = now()
WHERE p.name = $1::text
RETURNING p.name AS name
