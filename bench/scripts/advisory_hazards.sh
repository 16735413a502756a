#!/usr/bin/env bash
# The hazards of advisory-lock claims, for real, on a throwaway cluster with initdb's defaults
# (max_connections=100, max_locks_per_transaction=64): what a crash restart does to held locks and
# to an UNLOGGED sentinel, how many advisory locks one session can hold, what that does to the
# other sessions' ordinary locking, and what the lock table costs. docs/advisory-locks.md quotes
# its output. Run as root or as a user that may run initdb; it deletes the cluster at the end.
set -euo pipefail

# Section 9 runs PgBouncer: found first, so a machine without it stops here, saying what to install.
PGBOUNCER=$(command -v pgbouncer || { [ -x /usr/sbin/pgbouncer ] && echo /usr/sbin/pgbouncer; }) || {
    echo "pgbouncer not found: install it (Debian/Ubuntu: apt-get install pgbouncer)" >&2
    exit 1
}
BIN=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)
DIR=$(mktemp -d /tmp/pgmill-advisory-XXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
cleanup() { [ -f "$DIR/pgbouncer.pid" ] && kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null; as_pg "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
as_pg "$BIN/initdb" -D "$DIR/data" -A trust -U postgres >/dev/null
start() { as_pg "$BIN/pg_ctl" -D "$DIR/data" -w -l "$DIR/log" -o "-p $PORT -k $DIR -c listen_addresses='' $*" start >/dev/null; }
start
Q() { psql -X -q -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=0 "$@"; }

echo "== settings"
Q -At -c "SELECT version()" -c "SELECT name || '=' || setting FROM pg_settings WHERE name IN ('max_connections','max_locks_per_transaction','max_prepared_transactions') ORDER BY 1"
echo "== shared memory at the defaults"
Q -At -c "SHOW shared_memory_size"

echo "== 1. crash restart: a locker holds 100 in-flight jobs, an UNLOGGED sentinel row exists"
Q -c "CREATE TABLE job (id bigint PRIMARY KEY, state text NOT NULL DEFAULT 'available')" \
  -c "INSERT INTO job (id) SELECT generate_series(1, 1000)" \
  -c "CREATE UNLOGGED TABLE client (id text PRIMARY KEY)" -c "INSERT INTO client VALUES ('locker-1')"
# The locker: takes 100 jobs by advisory lock (no row written) and keeps its session open.
mkfifo "$DIR/locker.in"
( Q -At < "$DIR/locker.in" > "$DIR/locker.out" 2>&1 & echo $! > "$DIR/locker.pid" )
exec 3>"$DIR/locker.in"
echo "SELECT count(*) FROM (SELECT id FROM job ORDER BY id LIMIT 100) j WHERE pg_try_advisory_lock(j.id);" >&3
sleep 1
echo "locker took: $(cat "$DIR/locker.out")"
echo "another session sees locked: $(Q -At -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")"
echo "another session can take any of them: $(Q -At -c "SELECT count(*) FROM generate_series(1, 100) i WHERE pg_try_advisory_lock(i)") of 100"
as_pg "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null
start
echo "-- after pg_ctl stop -m immediate + start (a crash restart)"
echo "advisory locks held: $(Q -At -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")"
echo "another session takes the in-flight jobs: $(Q -At -c "SELECT count(*) FROM generate_series(1, 100) i WHERE pg_try_advisory_lock(i)") of 100"
echo "rows still available (no claim was ever written): $(Q -At -c "SELECT count(*) FROM job WHERE state = 'available'")"
echo "UNLOGGED sentinel rows: $(Q -At -c "SELECT count(*) FROM client")"
echo "SELECT 'old locker still connected';" >&3
sleep 1
exec 3>&-
kill "$(cat "$DIR/locker.pid")" 2>/dev/null || true
echo "the old locker's session, next statement: $(tail -n +2 "$DIR/locker.out" | tr '\n' ' ')"

echo "== 2. one session takes 100,000 advisory locks at the defaults"
# A session opened before, to try ordinary locking while the locks are held.
mkfifo "$DIR/other.in"
( Q -At < "$DIR/other.in" > "$DIR/other.out" 2>&1 & echo $! > "$DIR/other.pid" )
exec 5>"$DIR/other.in"
echo "SELECT 'other session connected';" >&5
mkfifo "$DIR/holder.in"
( Q -At < "$DIR/holder.in" > "$DIR/holder.out" 2>&1 & echo $! > "$DIR/holder.pid" )
exec 4>"$DIR/holder.in"
sleep 1
echo "SELECT count(pg_advisory_lock(i)) FROM generate_series(1, 100000) i;" >&4
echo "SELECT 'held: ' || count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();" >&4
sleep 3
cat "$DIR/holder.out"
echo "-- while that session holds them:"
echo "a new connection: $(Q -At -c "SELECT 'connected'" 2>&1 | tr '\n' ' ')"
{
  echo "\\echo '-- SELECT count(*) FROM job'"
  echo "SELECT count(*) FROM job;"
  echo "\\echo '-- UPDATE job SET state = ''running'' WHERE id = 500'"
  echo "UPDATE job SET state = 'running' WHERE id = 500;"
  echo "\\echo '-- CREATE TABLE other (id int)'"
  echo "CREATE TABLE other (id int);"
  echo "\\echo '-- SELECT pg_advisory_xact_lock(1)'"
  echo "SELECT pg_advisory_xact_lock(1);"
  echo "\\echo '-- SELECT 1'"
  echo "SELECT 1;"
  echo "\\echo 'other session done'"
} >&5
sleep 5
tail -n +2 "$DIR/other.out"
echo "SELECT pg_advisory_unlock_all();" >&4
exec 4>&- 5>&-
kill "$(cat "$DIR/holder.pid")" "$(cat "$DIR/other.pid")" 2>/dev/null || true

echo "== 3. the same with max_locks_per_transaction raised until 100,000 fit"
as_pg "$BIN/pg_ctl" -D "$DIR/data" -m fast stop >/dev/null
start "-c max_locks_per_transaction=1100"
Q -At -c "SHOW max_locks_per_transaction" -c "SHOW shared_memory_size"
Q -At -c "\\timing on" -c "SELECT 'held: ' || count(pg_advisory_lock(i)) FROM generate_series(1, 100000) i" -c "SELECT 'released: ' || count(*) FROM generate_series(1, 100000) i WHERE pg_advisory_unlock(i)" 2>&1

echo "== 4. advisory locks through PgBouncer in transaction mode (one server connection)"
BPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf '"postgres" ""\n' > "$DIR/users.txt"
cat > "$DIR/pgbouncer.ini" <<INI
[databases]
* = host=$DIR port=$PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BPORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/users.txt
pool_mode = transaction
default_pool_size = 1
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
INI
[ "$(id -u)" = 0 ] && chown postgres "$DIR/pgbouncer.ini" "$DIR/users.txt"
as_pg "$PGBOUNCER" -d "$DIR/pgbouncer.ini"
sleep 1
B() { psql -X -q -At -h 127.0.0.1 -p "$BPORT" -U postgres -d postgres "$@"; }
mkfifo "$DIR/a.in" "$DIR/b.in"
( B < "$DIR/a.in" > "$DIR/a.out" 2>&1 & echo $! > "$DIR/a.pid" )
( B < "$DIR/b.in" > "$DIR/b.out" 2>&1 & echo $! > "$DIR/b.pid" )
exec 6>"$DIR/a.in" 7>"$DIR/b.in"
echo "SELECT 'client A takes job 42: ' || pg_try_advisory_lock(42);" >&6; sleep 0.5
echo "SELECT 'client B takes job 42: ' || pg_try_advisory_lock(42);" >&7; sleep 0.5
echo "SELECT 'client B releases job 42: ' || pg_advisory_unlock(42);" >&7; sleep 0.5
echo "SELECT 'server sessions holding 42 after B released: ' || count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 42;" >&6; sleep 0.5
exec 6>&- 7>&-
sleep 0.5
cat "$DIR/a.out" "$DIR/b.out" | sort -s -k1,1
kill "$(cat "$DIR/a.pid")" "$(cat "$DIR/b.pid")" 2>/dev/null || true
