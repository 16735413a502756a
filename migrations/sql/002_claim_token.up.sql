-- pgmill schema version 2: the fencing token of a job's current claim.
--
-- Version 1 fenced every outcome on `attempt` alone, and the attempt number is given back when a
-- claim is released (an interrupted or snoozed attempt, a job released as orphaned), so the next
-- claim could reuse it and a late outcome of the earlier holder would match. Version 2 clients
-- set `claim_token` in the claim, a value their client never uses twice (a random 63-bit origin
-- per client, then one step per claim), compare it together with `attempt` in every outcome, and
-- clear it whenever the job leaves `running`. NULL means the job is not running, or was claimed by
-- a version 1 client.
--
-- Safe while version 1 clients run: a nullable column without a default is added without
-- rewriting the table, and version 1 statements name their columns and never read it. In a mixed
-- fleet, outcomes reported by version 2 clients are fully fenced (a version 1 claim leaves the
-- token NULL or stale, never equal to a live version 2 claim's); outcomes reported by version 1
-- clients keep version 1's attempt-only fence until every client is upgraded.

ALTER TABLE {schema}.pgmill_job ADD COLUMN claim_token bigint;
