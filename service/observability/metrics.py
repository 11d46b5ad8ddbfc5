"""Prometheus metrics of the service, created once per process.

Under gunicorn, set ``PROMETHEUS_MULTIPROC_DIR`` (an empty, writable directory) before the
processes start: prometheus-client then keeps every process's values in files there and
``GET /metrics`` adds them up (:func:`exposition`).  Without it each process reports its
own values from the default registry.
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
from prometheus_client.multiprocess import MultiProcessCollector

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


def exposition(multiprocess_dir: str | None) -> tuple[bytes, str]:
    """The text exposition of every metric, and its content type."""
    if multiprocess_dir:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=multiprocess_dir)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
