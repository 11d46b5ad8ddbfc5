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
if [ -z "${COMPOSE:-}" ]; then
    if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"
    else COMPOSE=docker-compose; fi
fi
for service in $($COMPOSE ps --services 2>/dev/null); do
    if [ -n "$($COMPOSE ps -q "$service")" ] && \
       [ "$(docker inspect -f '{{.State.Running}}' "$($COMPOSE ps -q "$service")")" = true ]
    then
        echo "restore: $service is running: stop the service first (docker compose down -v)" >&2
        exit 1
    fi
done

# The secret key the snapshot was taken under (deploy/backup.sh's note), if known.
note="${snapshot%.rdb}.txt"
key=${SECRET_KEY_FILE:-secrets/secret_key}
if [ -f "$note" ] && [ -f "$key" ]; then
    expected=$(sed -n 's/^Secret key (sha256 of the file): //p' "$note")
    actual=$(sha256sum "$key" | cut -d' ' -f1)
    if [ -n "$expected" ] && [ "$expected" != unknown ] && [ "$expected" != "$actual" ]; then
        echo "restore: $key is not the secret key of $snapshot (its note: $note);" \
             "restored under it, the idempotency records do not open" >&2
        [ "${RESTORE_ANY_KEY:-}" = 1 ] || exit 1
    fi
fi

# The redis container (not started) and its volume; the snapshot into the volume.
$COMPOSE up --no-start redis >/dev/null 2>&1
redis=$($COMPOSE ps -q redis)
docker cp "$snapshot" "$redis:/data/dump.rdb"

# A Redis of its own on that volume, the append-only file off: it loads the snapshot.
loader=$($COMPOSE run -d --no-deps redis \
    sh /usr/local/bin/redis-start.sh --appendonly no --save "" | tail -n 1)
trap 'docker rm -f "$loader" >/dev/null 2>&1 || true' EXIT
cli() {
    docker exec "$loader" sh -c \
        'REDISCLI_AUTH="$(head -n 1 /run/secrets/redis_password)" exec redis-cli "$@"' \
        cli "$@" | tr -d '\r'
}
field() {  # a field of INFO persistence
    cli INFO persistence | sed -n "s/^$1://p"
}
started=$(date +%s)
until [ "$(cli PING 2>/dev/null)" = PONG ]; do
    if [ $(($(date +%s) - started)) -gt "${RESTORE_WITHIN:-600}" ]; then
        echo "restore: Redis did not load the snapshot within ${RESTORE_WITHIN:-600} s" >&2
        docker logs "$loader" >&2
        exit 1
    fi
    sleep 0.2
done
keys=$(cli DBSIZE)
# The append-only file, written anew from the data set loaded (a rewrite), then Redis
# stopped: the service's Redis loads that file.
cli CONFIG SET appendonly yes >/dev/null
until [ "$(field aof_rewrite_in_progress)" = 0 ] && \
      [ "$(field aof_rewrite_scheduled)" = 0 ] && [ "$(field aof_enabled)" = 1 ]; do
    sleep 0.2
done
if [ "$(field aof_last_bgrewrite_status)" != ok ]; then
    echo "restore: writing the append-only file failed (Redis' log says why)" >&2
    docker logs "$loader" >&2
    exit 1
fi
cli SHUTDOWN >/dev/null 2>&1 || true
docker wait "$loader" >/dev/null
docker rm "$loader" >/dev/null
trap - EXIT
echo "restore: $keys keys from $snapshot" >&2

$COMPOSE up -d ${RESTORE_UP_ARGS:-}
