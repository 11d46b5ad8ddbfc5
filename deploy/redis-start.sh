#!/bin/sh
# Starts redis-server (docker-compose.yml's redis, and every node of
# docker-compose.cluster.yml) with Redis' `default` user asking for the password of the
# secret /run/secrets/redis_password (its first line), and replication logging in with
# it; the arguments are passed on to redis-server.  Nothing is answered without the
# password but the refusal (health checks and probes read the same secret).
#
# The user and the replication password go to a file of the container's own /tmp (never
# to the command line nor the environment, which `docker inspect` shows).  The default
# user keeps every permission: Redis 7.0 replays the append-only file's transactions as
# that user when it starts, and drops those its permissions would refuse.  The cluster
# bus (node to node gossip, failover votes) is not authenticated by Redis 7: the nodes'
# network must be private, as docker-compose.cluster.yml makes it.
set -eu
secret=${REDIS_PASSWORD_FILE:-/run/secrets/redis_password}
password=$(head -n 1 "$secret" | tr -d '\r\n')
if [ -z "$password" ]; then
    echo "redis-start: $secret is empty" >&2
    exit 1
fi
auth=/tmp/redis-auth
mkdir -p "$auth"
umask 077
cat > "$auth/users.acl" <<USERS
user default on >$password ~* &* +@all
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
