#!/bin/sh
# Starts redis-server (docker-compose.yml's redis, and every node of
# docker-compose.cluster.yml) with two users made from the secrets' first lines; the
# arguments are passed on to redis-server.  Nothing is answered without a password but
# the refusal.
#
#   default   /run/secrets/redis_password (REDIS_PASSWORD_FILE): every permission.
#             Operators' scripts (backup, restore, upgrade, cluster-init), the health
#             checks and replication (masterauth) log in as it.  It keeps every
#             permission: Redis 7.0 replays the append-only file's transactions as that
#             user when it starts, and drops those its permissions would refuse.
#   patience  /run/secrets/redis_service_password (REDIS_SERVICE_PASSWORD_FILE): the
#             service's (api, events, worker): every key and channel, every command but
#             those of the @dangerous category (FLUSHALL, KEYS, CONFIG, DEBUG, SHUTDOWN,
#             replication and cluster administration, ...), with back the read-only state
#             the service asks for: INFO (/metrics' memory figures) and redis-py's
#             cluster topology (CLUSTER SLOTS, SHARDS, NODES, INFO, MYID).
#
# The users and the replication password go to a file of the container's own /tmp,
# written anew at every start (never to the command line nor the environment, which `ps`
# and `docker inspect` show).  The cluster's nodes authenticate each other (the bus and
# replication) with certificates: deploy/redis-tls.conf.
set -eu

# The first line of the secret file $1 (named by the variable $2), refused when empty or
# when it holds a blank (an ACL line is split at blanks).
read_secret() {
    if [ ! -r "$1" ]; then
        echo "redis-start: $2: cannot read $1" >&2
        exit 1
    fi
    value=$(head -n 1 "$1" | tr -d '\r\n')
    case "$value" in
        "" | *[[:space:]]*)
            echo "redis-start: $2: $1 is empty or holds a blank" >&2
            exit 1 ;;
    esac
    printf '%s' "$value"
}

password=$(read_secret "${REDIS_PASSWORD_FILE:-/run/secrets/redis_password}" \
    REDIS_PASSWORD_FILE)
service_password=$(read_secret \
    "${REDIS_SERVICE_PASSWORD_FILE:-/run/secrets/redis_service_password}" \
    REDIS_SERVICE_PASSWORD_FILE)
auth=/tmp/redis-auth
mkdir -p "$auth"
umask 077
cat > "$auth/users.acl" <<USERS
user default on >$password ~* &* +@all
user patience on >$service_password ~* &* +@all -@dangerous +info +cluster|slots +cluster|shards +cluster|nodes +cluster|info +cluster|myid
USERS
cat > "$auth/auth.conf" <<CONF
aclfile $auth/users.acl
masterauth $password
CONF
# As the official images run it: not as root, where they have the tool to step down.
if [ "$(id -u)" = 0 ] && id redis >/dev/null 2>&1; then
    for tool in su-exec gosu; do
        if command -v "$tool" >/dev/null 2>&1; then
            chown -R redis "$auth"
            exec "$tool" redis redis-server "$@" --include "$auth/auth.conf"
        fi
    done
fi
exec redis-server "$@" --include "$auth/auth.conf"
