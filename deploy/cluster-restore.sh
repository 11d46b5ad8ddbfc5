#!/bin/sh
# Restores a backup of deploy/cluster-backup.sh into the Redis Cluster of
# docker-compose.cluster.yml, then starts the service (docs/deployment.md, "Backup and
# restore"):
#
#     docker compose -f docker-compose.cluster.yml down -v    (stopped, volumes gone)
#     deploy/cluster-restore.sh backups/cluster-<UTC time>
#
# Compose is run as `docker compose` (else docker-compose), or as COMPOSE says; it reads
# its usual variables (COMPOSE_FILE=docker-compose.cluster.yml, COMPOSE_PROJECT_NAME).
#
# A snapshot is not put on a node's volume: a node loads only its append-only file, and
# the new cluster's slots are assigned by cluster-init, not by the backup.  Instead the
# nodes and cluster-init are started alone (a new, empty cluster; the service's processes
# not yet), and each snapshot is loaded, in turn, by a Redis of its own started in a
# node's container (not a cluster node, append-only file off, listening on that
# container's loopback only), whose keys `redis-cli --cluster import --cluster-copy`
# sends to the master of each key's slot (MIGRATE, time to live kept), where the
# append-only file and the replicas take them as any write.  Then the keys the cluster
# holds are counted against those the snapshots held, and `up -d` starts the service.
set -eu
backup=${1:?usage: deploy/cluster-restore.sh BACKUP-DIRECTORY}
backup=${backup%/}
snapshots=$(ls "$backup"/*.rdb 2>/dev/null || true)
if [ -z "$snapshots" ] || [ ! -f "$backup/note.txt" ]; then
    echo "restore: $backup is not a backup of deploy/cluster-backup.sh" >&2
    exit 1
fi
for snapshot in $snapshots; do
    if [ "$(head -c 5 "$snapshot")" != REDIS ]; then
        echo "restore: $snapshot is not a Redis snapshot" >&2
        exit 1
    fi
done
. "$(dirname "$0")/restore-refusals.sh"
refuse_while_running
# The secret key the backup was taken under (its note), if known.
refuse_another_key "$backup/note.txt" "$backup"

# The nodes and cluster-init alone: a new cluster (its end waited for).
$COMPOSE up -d ${RESTORE_UP_ARGS:-} cluster-init >&2
init=$($COMPOSE ps -a -q cluster-init)
if [ "$(docker wait "$init")" != 0 ]; then
    docker logs "$init" >&2
    echo "restore: cluster-init failed" >&2
    exit 1
fi
host=$($COMPOSE ps -q redis-1)
[ "$(docker inspect -f '{{.State.Running}}' "$host")" = true ] || {
    echo "restore: redis-1 does not run" >&2
    exit 1
}
in_host() {  # a shell script run in redis-1's container, redis-cli logged in there
    docker exec -e RESTORE_WITHIN="${RESTORE_WITHIN:-600}" "$host" sh -c '
        set -eu
        REDISCLI_AUTH="$(head -n 1 /run/secrets/redis_password)"
        export REDISCLI_AUTH
        cli() { redis-cli --no-auth-warning "$@" 2>/dev/null | tr -d "\r"; }
        masters() { cli cluster nodes | awk '"'"'$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 {
            split($2, a, "@"); split(a[1], b, ":"); print b[1] }'"'"'; }
        keys() { total=0; for m in $(masters); do
            total=$((total + $(cli -h "$m" dbsize))); done; echo "$total"; }
        '"$1"
}
state=$(in_host 'cli cluster info | sed -n "s/^cluster_state://p"')
if [ "$state" != ok ]; then
    echo "restore: the new cluster does not serve every slot ($state)" >&2
    exit 1
fi
present=$(in_host keys)
if [ "$present" != 0 ]; then
    echo "restore: the cluster holds $present keys already: restore into a new one" \
         "(docker compose down -v first)" >&2
    exit 1
fi

# Each snapshot loaded by a Redis of its own in redis-1's container, its keys sent to
# the cluster.
loaded=0
for snapshot in $snapshots; do
    in_host 'rm -rf /tmp/restore; mkdir -p /tmp/restore'
    docker cp "$snapshot" "$host:/tmp/restore/dump.rdb"
    keys=$(in_host '
        redis-server --port 6390 --bind 127.0.0.1 --cluster-enabled no --appendonly no \
            --save "" --dir /tmp/restore --dbfilename dump.rdb --daemonize yes \
            --logfile /tmp/restore/loader.log >/dev/null
        started=$(date +%s)
        until [ "$(redis-cli -p 6390 ping 2>/dev/null | tr -d "\r")" = PONG ]; do
            if [ $(($(date +%s) - started)) -gt "$RESTORE_WITHIN" ]; then
                cat /tmp/restore/loader.log >&2
                echo "restore: the snapshot was not loaded within $RESTORE_WITHIN s" >&2
                exit 1
            fi
            sleep 0.1
        done
        keys=$(redis-cli -p 6390 dbsize | tr -d "\r")
        status=0
        redis-cli --no-auth-warning --cluster import 127.0.0.1:6379 \
            --cluster-from 127.0.0.1:6390 --cluster-copy --cluster-replace \
            > /tmp/restore/import.log 2>&1 || status=$?
        redis-cli -p 6390 shutdown nosave >/dev/null 2>&1 || true
        moved=$(grep -c ": OK$" /tmp/restore/import.log || true)
        if [ "$status" != 0 ] || [ "$moved" != "$keys" ]; then
            tail -n 20 /tmp/restore/import.log >&2
            echo "restore: $moved of $keys keys imported" >&2
            exit 1
        fi
        rm -rf /tmp/restore
        echo "$keys"')
    echo "restore: $keys keys from $snapshot" >&2
    loaded=$((loaded + keys))
done
present=$(in_host keys)
if [ "$present" != "$loaded" ]; then
    echo "restore: the cluster holds $present keys, the snapshots held $loaded" >&2
    exit 1
fi
echo "restore: $loaded keys in the cluster" >&2

$COMPOSE up -d ${RESTORE_UP_ARGS:-}
