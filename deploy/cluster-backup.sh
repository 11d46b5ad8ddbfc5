#!/bin/sh
# Backs up the Redis Cluster of docker-compose.cluster.yml while the service runs
# (docs/deployment.md, "Backup and restore"): every master that serves slots writes a
# snapshot of its data set (BGSAVE, deploy/redis-snapshot.sh: a fork, consistent at the
# moment it starts; play goes on meanwhile), all masters at once, and each snapshot is
# copied out of its container into DIRECTORY/cluster-<UTC time>/, with a note
# (note.txt) of the slots each snapshot's master served and the secret key's fingerprint.
#
#     deploy/cluster-backup.sh [DIRECTORY]        (DIRECTORY: ./backups unless given)
#
# Compose is run as `docker compose` (else docker-compose), or as COMPOSE says; it reads
# its usual variables (COMPOSE_FILE=docker-compose.cluster.yml, COMPOSE_PROJECT_NAME).
# Restore: deploy/cluster-restore.sh DIRECTORY/cluster-<UTC time>.
#
# Each key of a game shares one hash slot, so each game is in one snapshot, as it was
# when its master's snapshot began; the masters' snapshots begin within a second or so of
# each other, not at one instant.  Every move acknowledged before the script started is
# in them.  The secret key (secrets/secret_key) is not in the snapshots and must be kept
# with them, as for deploy/backup.sh.
set -eu
directory=${1:-backups}
here=$(dirname "$0")
if [ -z "${COMPOSE:-}" ]; then
    if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"
    else COMPOSE=docker-compose; fi
fi

# The running containers of the nodes (by their address) and one of the service's: one
# `docker inspect` of them all.
nodes="" app="" seed=""
containers=$($COMPOSE ps -q)
if [ -n "$containers" ]; then
    # shellcheck disable=SC2086
    described=$(docker inspect -f '{{.Id}} {{.State.Running}} {{index .Config.Labels "com.docker.compose.service"}} {{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' $containers)
else
    described=""
fi
while read -r container running service ips; do
    [ "$running" = true ] || continue
    case $service in
        redis-*)
            for ip in $ips; do nodes="$nodes $ip=$container=$service"; done
            seed=${seed:-$container} ;;
        api-*|events-*) app=${app:-$container} ;;
    esac
done <<EOF_CONTAINERS
$described
EOF_CONTAINERS
if [ -z "$seed" ]; then
    echo "cluster-backup: no node of the cluster runs (is the service up?)" >&2
    exit 1
fi
in_node() {  # container command...: redis-cli in that node, logged in with the secret
    node=$1
    shift
    docker exec "$node" sh -c \
        'REDISCLI_AUTH="$(head -n 1 /run/secrets/redis_password)" redis-cli "$@"' sh "$@" \
        | tr -d '\r'
}

# The masters that serve slots, as the seed sees them: "ip slots..." lines.
masters=$(in_node "$seed" cluster nodes | awk '$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 {
    split($2, address, ":"); line = address[1]
    for (i = 9; i <= NF; i++) if ($i !~ /^\[/) line = line " " $i
    print line }')
served=$(echo "$masters" | awk '{ for (i = 2; i <= NF; i++) { n = split($i, r, "-")
    total += (n == 2 ? r[2] - r[1] + 1 : 1) } } END { print total + 0 }')
if [ "$served" != 16384 ]; then
    echo "cluster-backup: the masters serve $served of the 16384 slots: a shard without" \
         "a master would be missing from the backup (wait for its failover)" >&2
    exit 1
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
target="$directory/cluster-$stamp"
mkdir -p "$target"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every master's snapshot at once (one `docker exec` each, in the background).
for ip in $(echo "$masters" | awk '{print $1}'); do
    entry=$(echo "$nodes" | tr ' ' '\n' | grep "^$ip=" || true)
    if [ -z "$entry" ]; then
        echo "cluster-backup: the master at $ip is no container of this project" >&2
        exit 1
    fi
    container=$(echo "$entry" | cut -d= -f2)
    ( docker exec -i -e BACKUP_WITHIN="${BACKUP_WITHIN:-600}" "$container" sh -s \
          < "$here/redis-snapshot.sh" > "$work/$ip.out" 2> "$work/$ip.err"
      echo $? > "$work/$ip.status" ) &
done
wait
failed=0
for ip in $(echo "$masters" | awk '{print $1}'); do
    if [ "$(cat "$work/$ip.status")" != 0 ]; then
        echo "cluster-backup: the snapshot of the master at $ip failed:" >&2
        cat "$work/$ip.err" >&2
        failed=1
    fi
done
[ "$failed" = 0 ] || exit 1

# Copied out, each under the name of its master's service; a note of their slots.
fingerprint=unknown
if [ -n "$app" ]; then
    fingerprint=$(docker exec "$app" sha256sum /run/secrets/secret_key | cut -d' ' -f1)
fi
{
    echo "Cluster backup $stamp: one snapshot per master, restored with"
    echo "deploy/cluster-restore.sh $target"
    echo "Secret key (sha256 of the file): $fingerprint"
    echo "Keep the secret key file (secrets/secret_key) with these snapshots: restored"
    echo "under another key, the idempotency records do not open."
} > "$work/note.txt"
echo "$masters" | while read -r ip slots; do
    entry=$(echo "$nodes" | tr ' ' '\n' | grep "^$ip=")
    container=$(echo "$entry" | cut -d= -f2)
    service=$(echo "$entry" | cut -d= -f3)
    path=$(sed -n 1p "$work/$ip.out")
    last=$(sed -n 2p "$work/$ip.out")
    file="$target/$service.rdb"
    docker cp "$container:$path" "$file.partial"
    if [ "$(head -c 5 "$file.partial")" != REDIS ]; then
        echo "cluster-backup: $file.partial is not a Redis snapshot" >&2
        exit 1
    fi
    mv "$file.partial" "$file"
    echo "Snapshot: $service.rdb (master $ip, Redis LASTSAVE $last, $(wc -c < "$file") bytes), slots $slots" \
        >> "$work/note.txt"
done
mv "$work/note.txt" "$target/note.txt"
echo "$target"
