# What deploy/restore.sh and deploy/cluster-restore.sh both do before a restore touches
# anything, sourced by both (POSIX sh, under their `set -eu`): the compose command
# chosen, and the two refusals.

# Compose: the command in COMPOSE, else `docker compose`, else docker-compose.
if [ -z "${COMPOSE:-}" ]; then
    if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"
    else COMPOSE=docker-compose; fi
fi

# No restore while a container of the service runs.
refuse_while_running() {
    for container in $($COMPOSE ps -q); do
        if [ "$(docker inspect -f '{{.State.Running}}' "$container")" = true ]; then
            echo "restore: a container of the service runs ($container): stop the service" \
                 "first (docker compose down -v)" >&2
            exit 1
        fi
    done
}

# refuse_another_key NOTE BACKUP: no restore of BACKUP (RESTORE_ANY_KEY=1: restored anyway)
# when its note NOTE gives the fingerprint of another secret key than the file of
# SECRET_KEY_FILE (secrets/secret_key by default): restored under it, the idempotency
# records do not open.  Without the note, the key's file or a known fingerprint, no
# refusal.
refuse_another_key() {
    key=${SECRET_KEY_FILE:-secrets/secret_key}
    if [ ! -f "$1" ] || [ ! -f "$key" ]; then
        return 0
    fi
    expected=$(sed -n 's/^Secret key (sha256 of the file): //p' "$1")
    if [ -n "$expected" ] && [ "$expected" != unknown ] &&
            [ "$expected" != "$(sha256sum "$key" | cut -d' ' -f1)" ]; then
        echo "restore: $key is not the secret key of $2 (its note: $1);" \
             "restored under it, the idempotency records do not open" >&2
        [ "${RESTORE_ANY_KEY:-}" = 1 ] || exit 1
    fi
}
