#!/bin/sh
# The one-shot `cluster-init` of docker-compose.cluster.yml: forms the Redis Cluster the
# first time, and on every later start finds it again through whichever node answers and
# brings empty nodes into it (a node replaced after its host or volume was lost).
# Every wait is bounded: it always ends, so the services that wait for it start.
#
#   REDIS_NETWORK  the nodes' network, first three numbers (172.28.0)
#   REDIS_NODES    the nodes' last numbers (11 12 ... 19): REDIS_NETWORK.<n>
#   REDIS_PORT     their port (6379)
#   REDIS_PASSWORD_FILE  when that file exists, its first line is the password
#                  of REDIS_USER (default: the `default` user)
#   INIT_WAIT_SECONDS  how long it waits for the nodes to answer (30)
#
# First start (no node knows another): the cluster is formed from the nodes that answer,
# three masters with two replicas each (one each with 6 to 8 nodes, none with 3 to 5);
# nodes that answer later join as below.  Later starts: a node that answers and knows no
# other node (an empty volume) meets the cluster and becomes a replica of the master with
# the fewest replicas; the node that stood at its address before (failed, replaced) is
# forgotten by every node.  Exits 1 only when no cluster can be
# formed or found; a cluster with slots unserved is reported and exits 0 (the shards
# that serve go on serving: cluster-require-full-coverage no).
set -u

net=${REDIS_NETWORK:-172.28.0}
nodes=${REDIS_NODES:-11 12 13 14 15 16 17 18 19}
port=${REDIS_PORT:-6379}
wait_seconds=${INIT_WAIT_SECONDS:-30}
if [ -n "${REDIS_PASSWORD_FILE:-}" ] && [ -r "$REDIS_PASSWORD_FILE" ]; then
    REDISCLI_AUTH=$(head -n 1 "$REDIS_PASSWORD_FILE" | tr -d '\r\n')
    export REDISCLI_AUTH
fi
user_option=""
if [ -n "${REDIS_USER:-}" ]; then
    user_option="--user $REDIS_USER"
fi

# One command to one node, never longer than 3 s (a node whose host is gone).
cli() {
    cli_host=$1
    shift
    # shellcheck disable=SC2086
    timeout 3 redis-cli --no-auth-warning $user_option -h "$cli_host" -p "$port" "$@" 2>/dev/null \
        | tr -d '\r'
}

now() { date +%s; }

info_field() {  # host field: a field of CLUSTER INFO
    cli "$1" cluster info | sed -n "s/^$2://p"
}

# The nodes that answer, waiting up to wait_seconds for all of them.
deadline=$(($(now) + wait_seconds))
while :; do
    alive=""
    missing=""
    for node in $nodes; do
        if [ "$(cli "$net.$node" ping)" = "PONG" ]; then
            alive="$alive $net.$node"
        else
            missing="$missing $net.$node"
        fi
    done
    [ -z "$missing" ] && break
    if [ "$(now)" -ge "$deadline" ]; then
        echo "not answering after ${wait_seconds} s:$missing"
        break
    fi
    sleep 0.5
done
count=$(echo $alive | wc -w)

# A node of the formed cluster: the first that knows other nodes.
seed=""
for host in $alive; do
    known=$(info_field "$host" cluster_known_nodes)
    if [ -n "$known" ] && [ "$known" -gt 1 ]; then
        seed=$host
        break
    fi
done

# The masters that serve slots, as seen from the seed: "id ip:port" lines.
masters() {
    cli "$seed" cluster nodes | awk '$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 {
        split($2, address, "@"); print $1, address[1] }'
}

if [ -z "$seed" ]; then
    if [ "$count" -ge 9 ]; then replicas=2
    elif [ "$count" -ge 6 ]; then replicas=1
    elif [ "$count" -ge 3 ]; then replicas=0
    else
        echo "cannot form the cluster: $count node(s) answer"
        exit 1
    fi
    members=$(echo $alive | tr ' ' '\n' | head -n $((3 * (replicas + 1))))
    # shellcheck disable=SC2046
    timeout 60 redis-cli --no-auth-warning $user_option --cluster create \
        $(for host in $members; do echo "$host:$port"; done) \
        --cluster-replicas $replicas --cluster-yes
    seed=$(echo "$members" | head -n 1)
    # Gossip takes a moment: wait until the seed's view names the three masters, then
    # until each has its replicas online (synced, not just connected).
    deadline=$(($(now) + 60))
    until [ "$(masters | wc -l)" -ge 3 ] || [ "$(now)" -ge "$deadline" ]; do sleep 0.2; done
    for address in $(masters | awk '{print $2}'); do
        until [ "$(cli "${address%:*}" info replication | grep -c 'state=online')" \
                -ge $replicas ] || [ "$(now)" -ge "$deadline" ]; do
            sleep 0.2
        done
    done
fi

# Empty nodes (knowing no other node) join the cluster as replicas.
assigned=""
unjoined=0
for host in $alive; do
    [ "$(info_field "$host" cluster_known_nodes)" = "1" ] || continue
    echo "joining $host to the cluster"
    # Whatever stood at this address before is gone for good: every node forgets it
    # (failed, and either still at this address or without one since the new node
    # answered there under another id).
    stale=$(cli "$seed" cluster nodes | awk -v address="$host:$port" '$3 ~ /(^|,)fail(,|$)/ {
        split($2, a, "@"); if (a[1] == address || $3 ~ /noaddr/ || a[1] ~ /^:/) print $1 }')
    for id in $stale; do
        for other in $alive; do
            [ "$other" = "$host" ] || cli "$other" cluster forget "$id" >/dev/null
        done
    done
    cli "$host" cluster meet "${seed}" "$port" >/dev/null
    # The master with the fewest replicas (those joined by this run counted too).
    deadline=$(($(now) + 30))
    master=""
    while [ -z "$master" ] && [ "$(now)" -lt "$deadline" ]; do
        view=$(cli "$seed" cluster nodes)
        master=$(echo "$view" | awk -v assigned="$assigned" '
            BEGIN { n = split(assigned, list, " "); for (i = 1; i <= n; i++) extra[list[i]]++ }
            $3 ~ /master/ && $3 !~ /fail/ && NF >= 9 { serving[$1] = 1 }
            $3 ~ /slave/ && $3 !~ /fail/ { replicas[$4]++ }
            END { best = ""; for (id in serving) { c = replicas[id] + extra[id]
                  if (best == "" || c < fewest) { best = id; fewest = c } } print best }')
        if [ -n "$master" ] && [ "$(cli "$host" cluster replicate "$master")" != "OK" ]; then
            master=""  # the new node does not know it yet: gossip takes a moment
        fi
        [ -n "$master" ] || sleep 0.2
    done
    if [ -z "$master" ]; then
        echo "$host did not join within 30 s"
        unjoined=$((unjoined + 1))
        continue
    fi
    assigned="$assigned $master"
    echo "$host replicates $master"
    until [ "$(cli "$host" info replication | sed -n 's/^master_link_status://p')" = "up" ] \
            || [ "$(now)" -ge "$deadline" ]; do
        sleep 0.2
    done
done

# Every slot served, or the reason why not; and the seed's view holding every node that
# answered and is in the cluster (a node joined is known to the others by gossip, a
# moment after its replication is up).
deadline=$(($(now) + 30))
until [ "$(info_field "$seed" cluster_state)" = "ok" ] || [ "$(now)" -ge "$deadline" ]; do
    sleep 0.5
done
until [ "$(info_field "$seed" cluster_known_nodes)" -ge $((count - unjoined)) ] 2>/dev/null \
        || [ "$(now)" -ge "$deadline" ]; do
    sleep 0.2
done
cli "$seed" cluster info | grep -E '^cluster_(state|slots_ok|known_nodes)'
if [ "$(info_field "$seed" cluster_state)" != "ok" ]; then
    echo "warning: the cluster does not serve every slot (the others are served)"
fi
exit 0
