#!/bin/sh
# Backs up the Redis of docker-compose.yml while the service runs (docs/deployment.md,
# "Backup and restore"): Redis writes a snapshot of its whole data set (BGSAVE: a fork,
# consistent at the moment it starts; play goes on meanwhile), and the snapshot is copied
# out of the container as DIRECTORY/redis-<UTC time>.rdb, with a note beside it
# (redis-<UTC time>.txt) of the secret key's fingerprint.
#
#     deploy/backup.sh [DIRECTORY]        (DIRECTORY: ./backups unless given)
#
# Compose is run as `docker compose` (else docker-compose), or as COMPOSE says; it reads
# its usual variables (COMPOSE_FILE, COMPOSE_PROJECT_NAME) and the compose file's own.
#
# The secret key (secrets/secret_key) is not in the snapshot and must be kept with it:
# restored under another key, the games are there but the idempotency records do not
# open (a write sent again is not recognised).  The Redis password is not needed: a
# restore works under the password of the day.
set -eu
directory=${1:-backups}
if [ -z "${COMPOSE:-}" ]; then
    if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"
    else COMPOSE=docker-compose; fi
fi

# The containers of redis and api (one compose call: each takes a second or more).
redis= api=
for container in $($COMPOSE ps -q); do
    case $(docker inspect -f '{{index .Config.Labels "com.docker.compose.service"}}' \
           "$container") in
        redis) redis=$container ;;
        api) api=$container ;;
    esac
done
if [ -z "$redis" ]; then
    echo "backup: the redis service has no container (is the service up?)" >&2
    exit 1
fi
# In the container (deploy/redis-snapshot.sh, one `docker exec`): the snapshot asked for
# and waited for; then its path and LASTSAVE.
found=$(docker exec -i -e BACKUP_WITHIN="${BACKUP_WITHIN:-600}" "$redis" sh -s \
        < "$(dirname "$0")/redis-snapshot.sh")
path=$(echo "$found" | sed -n 1p)
last=$(echo "$found" | sed -n 2p)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$directory"
target="$directory/redis-$stamp.rdb"
# A later snapshot replaces the file whole (a rename), never part of it.
docker cp "$redis:$path" "$target.partial"
if [ "$(head -c 5 "$target.partial")" != REDIS ]; then
    echo "backup: $target.partial is not a Redis snapshot" >&2
    exit 1
fi
mv "$target.partial" "$target"

# The fingerprint of the secret key the service runs with (not the key).
fingerprint=unknown
if [ -n "$api" ]; then
    fingerprint=$(docker exec "$api" sha256sum /run/secrets/secret_key | cut -d' ' -f1)
fi
cat > "$directory/redis-$stamp.txt" <<NOTE
Snapshot: redis-$stamp.rdb (Redis LASTSAVE $last), $(wc -c < "$target") bytes
Secret key (sha256 of the file): $fingerprint
Keep the secret key file (secrets/secret_key) with this snapshot: restored under
another key, the idempotency records do not open.  Restore: deploy/restore.sh $target
NOTE
echo "$target"
