#!/bin/sh
# Run inside a Redis container by deploy/backup.sh and deploy/cluster-backup.sh
# (`docker exec -i <container> sh -s < deploy/redis-snapshot.sh`): asks that Redis for a
# snapshot of its whole data set (BGSAVE: a fork, consistent at the moment it starts;
# writes go on meanwhile) and waits for it; prints the snapshot's path, then LASTSAVE.
# redis-cli logs in with the secret (/run/secrets/redis_password), never on a command
# line.  BACKUP_WITHIN: seconds the snapshot may take (600).
#
# LASTSAVE counts whole seconds: the snapshot must end in a later second than the last
# one did, or its end could not be told from it.  SCHEDULE: should a rewrite of the
# append-only file be under way, the snapshot starts when it ends, not refused.
set -eu
within=${BACKUP_WITHIN:-600}
REDISCLI_AUTH="$(head -n 1 /run/secrets/redis_password)"
export REDISCLI_AUTH
cli() { redis-cli "$@" | tr -d "\r"; }
field() { cli INFO persistence | sed -n "s/^$1://p"; }
started=$(date +%s)
before=$(cli LASTSAVE)
while [ "$(date +%s)" -le "$before" ]; do sleep 0.1; done
cli BGSAVE SCHEDULE >/dev/null
until [ "$(cli LASTSAVE)" -gt "$before" ] && [ "$(field rdb_bgsave_in_progress)" = 0 ]
do
    if [ $(($(date +%s) - started)) -gt "$within" ]; then
        echo "backup: the snapshot did not end within $within s" >&2
        exit 1
    fi
    sleep 0.1
done
if [ "$(field rdb_last_bgsave_status)" != ok ]; then
    echo "backup: the snapshot failed (Redis' log says why)" >&2
    exit 1
fi
echo "$(cli CONFIG GET dir | sed -n 2p)/$(cli CONFIG GET dbfilename | sed -n 2p)"
cli LASTSAVE
