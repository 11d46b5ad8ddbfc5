#!/bin/sh
# Restores a snapshot of deploy/backup.sh into the Redis of docker-compose.yml, then
# starts the service (docs/deployment.md, "Backup and restore"):
#
#     docker compose down -v              (the service stopped, its volumes gone)
#     deploy/restore.sh backups/redis-<UTC time>.rdb
#
# Compose is run as `docker compose` (else docker-compose), or as COMPOSE says; it reads
# its usual variables (COMPOSE_FILE, COMPOSE_PROJECT_NAME) and the compose file's own.
#
# Redis runs with the append-only file, and Redis 7 then loads that file alone at start
# (an empty data set where there is none), never the snapshot.  So the snapshot goes into
# the redis volume, a Redis of its own is started on it once with the append-only file
# off (it loads the snapshot), turns the append-only file on (which writes it anew from
# the data set loaded) and stops; then `up -d` starts the service on that volume.
# Whatever the volume held before is replaced.
set -eu
snapshot=${1:?usage: deploy/restore.sh SNAPSHOT.rdb}
if [ "$(head -c 5 "$snapshot")" != REDIS ]; then
    echo "restore: $snapshot is not a Redis snapshot" >&2
    exit 1
fi
. "$(dirname "$0")/restore-refusals.sh"
refuse_while_running
# The secret key the snapshot was taken under (deploy/backup.sh's note), if known.
refuse_another_key "${snapshot%.rdb}.txt" "$snapshot"

# The redis container (not started) and its volume; the snapshot into the volume.
$COMPOSE up --no-start redis >/dev/null
redis=$($COMPOSE ps -q redis)
docker cp "$snapshot" "$redis:/data/dump.rdb"

# A Redis of its own on that volume, the append-only file off: it loads the snapshot.
loader=$($COMPOSE run -d --no-deps redis \
    sh /usr/local/bin/redis-start.sh --appendonly no --save "" | tail -n 1)
trap 'docker rm -f "$loader" >/dev/null 2>&1 || true' EXIT
# In it, one `docker exec` (redis-cli logged in with the secret, never on a command
# line): the snapshot loaded, then the append-only file turned on and written anew from
# the data set loaded (a rewrite); then Redis stopped, and the service's Redis loads
# that file.  Prints the number of keys loaded.
keys=$(docker exec -e RESTORE_WITHIN="${RESTORE_WITHIN:-600}" "$loader" sh -c '
    set -eu
    REDISCLI_AUTH="$(head -n 1 /run/secrets/redis_password)"
    export REDISCLI_AUTH
    cli() { redis-cli "$@" 2>/dev/null | tr -d "\r"; }
    field() { cli INFO persistence | sed -n "s/^$1://p"; }
    started=$(date +%s)
    until [ "$(cli PING)" = PONG ]; do
        if [ $(($(date +%s) - started)) -gt "$RESTORE_WITHIN" ]; then
            echo "restore: Redis did not load the snapshot within $RESTORE_WITHIN s" >&2
            exit 1
        fi
        sleep 0.1
    done
    keys=$(cli DBSIZE)
    [ "$(cli CONFIG SET appendonly yes)" = OK ]
    until [ "$(field aof_rewrite_in_progress)" = 0 ] &&
          [ "$(field aof_rewrite_scheduled)" = 0 ] && [ "$(field aof_enabled)" = 1 ]; do
        sleep 0.1
    done
    if [ "$(field aof_last_bgrewrite_status)" != ok ]; then
        echo "restore: writing the append-only file failed" >&2
        exit 1
    fi
    echo "$keys"') || { docker logs "$loader" >&2; exit 1; }
# Stopped (its own exec: the container ends with it, and the exec may be cut short).
docker exec "$loader" sh -c \
    'REDISCLI_AUTH="$(head -n 1 /run/secrets/redis_password)" exec redis-cli SHUTDOWN' \
    >/dev/null 2>&1 || true
docker wait "$loader" >/dev/null
docker rm "$loader" >/dev/null
trap - EXIT
echo "restore: $keys keys from $snapshot" >&2

$COMPOSE up -d ${RESTORE_UP_ARGS:-}
