"""Prometheus metrics of the service, created once per process.

Under gunicorn, set ``PROMETHEUS_MULTIPROC_DIR`` (an empty, writable directory) before the
processes start: prometheus-client then keeps every process's values in files there and
``GET /metrics`` adds them up (:func:`exposition`).  Without it each process reports its
own values from the default registry.

Redis's memory (``INFO memory`` of each master: what it uses, and its ``maxmemory``, past
which it refuses writes: ``maxmemory-policy noeviction``, so no game is ever evicted) is
read when ``/metrics`` is asked, not kept: :class:`RedisMemory`.
"""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from redis import RedisError

HTTP_REQUESTS = Counter(
    "patience_http_requests_total",
    "HTTP requests answered, by method, route template and status code.",
    ["method", "route", "status"],
)
HTTP_LATENCY = Histogram(
    "patience_http_request_duration_seconds",
    "Time to answer an HTTP request, by method and route template.",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
GAMES_CREATED = Counter(
    "patience_games_created_total", "Games created, by variant.", ["variant"])
MOVES_APPLIED = Counter(
    "patience_moves_applied_total", "Moves applied (resign included), by variant.", ["variant"])
UNDOS_APPLIED = Counter(
    "patience_undos_applied_total", "Moves taken back, by variant.", ["variant"])
GAMES_FINISHED = Counter(
    "patience_games_finished_total", "Games that ended, by variant and final status.",
    ["variant", "status"],
)
SLOT_WAITS_GIVEN_UP = Counter(
    "patience_request_slot_waits_given_up_total",
    "Requests that waited REQUEST_SLOT_WAIT_SECONDS for their turn through the app and went "
    "in without one.",
)
EVENT_STREAMS = Gauge(
    "patience_event_streams", "Events streams (Server-Sent Events) open now.",
    multiprocess_mode="livesum",
)


_CHILDREN: dict[tuple, object] = {}


def child(metric, *labels: str):
    """``metric.labels(*labels)``, looked up once: ``labels()`` takes a lock and checks
    its arguments on every call.  The label values are few (variants, statuses, route
    templates), so the children are kept for the life of the process."""
    key = (metric, labels)
    found = _CHILDREN.get(key)
    if found is None:
        found = _CHILDREN[key] = metric.labels(*labels)
    return found


class RedisMemory:
    """``patience_redis_used_memory_bytes`` and ``patience_redis_maxmemory_bytes`` of each
    master (label ``node``), from ``INFO memory`` now; none while Redis cannot be asked
    (``/metrics`` still answers)."""

    def __init__(self, client_of):
        #: Returns the backend's redis-py client (one Redis, or the cluster's).
        self.client_of = client_of

    def nodes(self) -> dict[str, dict]:
        client = self.client_of()
        if hasattr(client, "get_primaries"):  # a RedisCluster: each master's own
            found = client.info("memory", target_nodes=client.PRIMARIES)
            return found if "used_memory" not in found else {"cluster": found}
        pool = client.connection_pool.connection_kwargs
        return {f"{pool.get('host', 'redis')}:{pool.get('port', 6379)}": client.info("memory")}

    def collect(self):
        used = GaugeMetricFamily("patience_redis_used_memory_bytes",
                                 "Memory a Redis master uses now (INFO used_memory).",
                                 labels=["node"])
        limit = GaugeMetricFamily("patience_redis_maxmemory_bytes",
                                  "A Redis master's maxmemory (0: none), past which it "
                                  "refuses writes (noeviction).", labels=["node"])
        try:
            nodes = self.nodes()
        except (RedisError, OSError):
            nodes = {}
        for node, info in sorted(nodes.items()):
            used.add_metric([node], float(info.get("used_memory", 0)))
            limit.add_metric([node], float(info.get("maxmemory", 0)))
        yield used
        yield limit


def exposition(multiprocess_dir: str | None, *collectors) -> tuple[bytes, str]:
    """The text exposition of every metric (and of ``collectors``, asked now), and its
    content type."""
    if multiprocess_dir:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=multiprocess_dir)
        text = generate_latest(registry)
    else:
        text = generate_latest(REGISTRY)
    if collectors:
        now = CollectorRegistry()
        for collector in collectors:
            now.register(collector)
        text += generate_latest(now)
    return text, CONTENT_TYPE_LATEST
