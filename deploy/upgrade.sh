#!/bin/sh
# A rolling upgrade of docker-compose.cluster.yml while the service runs
# (docs/deployment.md, "Upgrades"): the API replicas, the events containers and the
# solver's worker are replaced one at a time by containers of the image that APP_IMAGE
# names now (build it first: `docker compose -f docker-compose.cluster.yml build api-1`).
#
#     deploy/upgrade.sh [SERVICE...]   (all of api-1 api-2 api-3 events-1 events-2 worker
#                                       unless given, in that order)
#
# Each server of the load balancer is first drained through HAProxy's stats page (the
# user admin and the password of STATS_PASSWORD_FILE, ./secrets/stats_password unless
# set): HAProxy sends it no new request, and the script waits until it serves none (a
# request still served after UPGRADE_DRAIN_WITHIN seconds, 30, stops the script, the
# replica left drained); an events container's streams are not
# waited for (they last as long as their clients follow): they end when it stops, and
# their clients resume with Last-Event-ID on the other one.  Then the service is
# recreated alone (`up -d --no-deps --force-recreate`, its graceful stop within 30 s),
# the new container must answer GET /readyz itself, HAProxy must have its address and
# its check must pass, and only then is it made ready (back in rotation) and the next
# one begins.  The worker is recreated and waited for (its heartbeat).  Any step not done
# within UPGRADE_STEP_WITHIN seconds (120) stops the script with exit status 1, the
# service it was on left drained (the others serve).
#
# Compose is run as `docker compose` (else docker-compose), or as COMPOSE says; it reads
# its usual variables (COMPOSE_FILE=docker-compose.cluster.yml, COMPOSE_PROJECT_NAME) and
# the compose file's own (APP_IMAGE).  UPGRADE_UP_ARGS is added to `up` (--no-build).
# Needs curl.  Prints one line per step, with the seconds since the script began.
set -eu
services=${*:-api-1 api-2 api-3 events-1 events-2 worker}
drain_within=${UPGRADE_DRAIN_WITHIN:-30}
step_within=${UPGRADE_STEP_WITHIN:-120}
password_file=${STATS_PASSWORD_FILE:-secrets/stats_password}
if [ -z "${COMPOSE:-}" ]; then
    if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"
    else COMPOSE=docker-compose; fi
fi
started=$(date +%s)
say() { echo "upgrade: $(($(date +%s) - started)) s: $*"; }
fail() { echo "upgrade: $*" >&2; exit 1; }
[ -r "$password_file" ] || fail "cannot read $password_file (STATS_PASSWORD_FILE)"
command -v curl >/dev/null || fail "needs curl"

lb=$($COMPOSE ps -q lb)
[ -n "$lb" ] || fail "the lb service has no container (is the service up?)"
stats=$(docker port "$lb" 8404/tcp | head -n 1 | sed 's/^0\.0\.0\.0:/127.0.0.1:/')
[ -n "$stats" ] || fail "HAProxy's stats page is not published (STATS_PORT)"
# curl reads the credentials from its standard input, never from its command line.
credentials() { printf 'user = "admin:%s"\n' "$(head -n 1 "$password_file" | tr -d '\r\n')"; }
# server field: a field of the server's line of the stats page's CSV.
field() {
    credentials | curl -fsS -K - "http://$stats/stats;csv" | awk -F, -v server="$1" \
        -v name="$2" 'NR == 1 { sub(/^# /, ""); for (i = 1; i <= NF; i++) column[$i] = i; next }
        $1 "/" $2 == server { print $column[name] }'
}
# server action: drain, ready (HAProxy's admin actions of the stats page).
act() {
    backend=${1%/*}
    answer=$(credentials | curl -sS -K - -o /dev/null -w '%{redirect_url}' \
        -d "s=${1#*/}&action=$2&b=$backend" "http://$stats/stats")
    case $answer in *st=DONE*) ;; *) fail "HAProxy refused to $2 $1" ;; esac
}
# until seconds what command...: runs the command until it succeeds.
until_done() {
    within=$1 what=$2
    shift 2
    deadline=$(($(date +%s) + within))
    until "$@"; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "$what: not within $within s"
        sleep 0.2
    done
}
answers_readyz() {  # container port
    docker exec "$1" python -c "import urllib.request; urllib.request.urlopen(
'http://127.0.0.1:$2/readyz', timeout=2)" >/dev/null 2>&1
}
idle() { [ "$(field "$1" scur)" = 0 ]; }
has_status() { [ "$(field "$1" status)" = "$2" ]; }
# HAProxy checks the new container: its address, a passed check, drained still.
checked() {  # server address
    [ "$(field "$1" addr)" = "$2" ] && [ "$(field "$1" check_status)" = L7OK ] &&
        [ "$(field "$1" status)" = DRAIN ]
}
address() {  # container port: its address on the network it shares with lb
    for network in $(docker inspect -f '{{range $n, $_ := .NetworkSettings.Networks}}{{$n}} {{end}}' "$lb"); do
        ip=$(docker inspect -f "{{with index .NetworkSettings.Networks \"$network\"}}{{.IPAddress}}{{end}}" "$1")
        if [ -n "$ip" ]; then echo "$ip:$2"; return; fi
    done
}
recreate() {  # compose's progress to standard error
    # shellcheck disable=SC2086
    $COMPOSE up -d --no-deps --force-recreate -t 30 ${UPGRADE_UP_ARGS:-} "$1" >&2
}
image() { docker inspect -f '{{.Image}}' "$1" | cut -c8-19; }  # container

for service in $services; do
    case $service in
        api-*) server=api/$service port=8000 ;;
        events-*) server=events/$service port=8001 ;;
        worker) server="" port="" ;;
        *) fail "$service: not a service this script upgrades" ;;
    esac
    if [ -n "$server" ]; then
        act "$server" drain
        if [ "$port" = 8000 ]; then
            until_done "$drain_within" "$server serving nothing" idle "$server"
        fi
        say "$service drained"
    fi
    recreate "$service"
    container=$($COMPOSE ps -q "$service")
    if [ -n "$server" ]; then
        until_done "$step_within" "$service answering /readyz" answers_readyz "$container" "$port"
        target=$(address "$container" "$port")
        until_done "$step_within" "HAProxy checking $service at $target" checked "$server" "$target"
        act "$server" ready
        until_done "$step_within" "$server back in rotation" has_status "$server" UP
        say "$service in rotation on image $(image "$container")"
    else
        # Its heartbeat file, in the new container's own /tmp: a turn of its loop done.
        until_done "$step_within" "$service's heartbeat" docker exec "$container" \
            sh -c 'test -f "$WORKER_HEARTBEAT_FILE"'
        say "$service running on image $(image "$container")"
    fi
done
say "done"
