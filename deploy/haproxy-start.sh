#!/bin/sh
# Starts HAProxy (the lb of docker-compose.cluster.yml) as the official image runs it
# (master-worker, in the foreground), with the stats page's password read from the secret
# /run/secrets/stats_password (its first line) into HAProxy's own environment, where
# deploy/haproxy.cfg names it (HAPROXY_STATS_PASSWORD): never on a command line nor in
# the container's environment, which `docker inspect` shows.  Arguments are passed on.
set -eu
secret=/run/secrets/stats_password
password=$(head -n 1 "$secret" | tr -d '\r\n')
if [ -z "$password" ]; then
    echo "haproxy-start: $secret is empty" >&2
    exit 1
fi
case $password in
    *:*|*'"'*|*' '*)
        echo "haproxy-start: $secret holds a colon, a quote or a space" >&2
        exit 1 ;;
esac
HAPROXY_STATS_PASSWORD=$password
export HAPROXY_STATS_PASSWORD
exec haproxy -W -db -f /usr/local/etc/haproxy/haproxy.cfg "$@"
