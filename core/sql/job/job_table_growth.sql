-- Whether the job table has outgrown the statistics the planner last took of it, so that the
-- analyzer takes them again (job_analyze.sql). A prepared statement's generic plan is made from
-- the statistics of when it is made and kept until they change: a claim's plan made while the
-- table held a few pages finds the claimed ids by a sequential scan (the cheapest way at that
-- size), and keeps doing so after a burst of inserts has grown the table to thousands of pages
-- (a 100-job claim from 20,000 queued: 18.7 ms, against 2.2 ms once replanned), until
-- autovacuum's next ANALYZE, up to autovacuum_naptime after the table grew and later on a busy
-- server. An ANALYZE updates the table's pg_class row, which makes every session replan its
-- statements on the table.
-- Outgrown: at least $2 pages now, and at least $3 times relpages (the table's size when its
-- statistics were last taken; 0 before its first VACUUM or ANALYZE). Never while a VACUUM or an
-- ANALYZE of the table is under way (it takes the statistics itself), nor when this role may not
-- analyze the table (ANALYZE would only warn): only a member of the owner's role may.
-- Returns no row when the schema has no job table.
-- $1: the schema's name, unquoted
-- $2: fewest pages worth analyzing
-- $3: how many times its size at the last statistics the table must have grown to
SELECT g.stats_pages AS stats_pages, g.pages AS pages,
    g.pages >= $2::bigint AND g.pages >= $3::bigint * g.stats_pages
        AND pg_has_role(g.owner, 'USAGE')
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_progress_vacuum v WHERE v.relid = g.oid)
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_progress_analyze a WHERE a.relid = g.oid)
        AS outgrown
FROM (
    SELECT c.oid AS oid, c.relowner AS owner, c.relpages::bigint AS stats_pages,
        pg_relation_size(c.oid) / current_setting('block_size')::bigint AS pages
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $1::text AND c.relname = 'pgmill_job'
) AS g
