"""GET /metrics: Redis's memory, each master's used_memory and maxmemory, read from
INFO when asked (one Redis, and each master of a cluster); none while Redis is down."""

import re

import pytest

from tests.api.support import make_app


def _gauges(text: str, name: str) -> dict[str, float]:
    return {node: float(value) for node, value in
            re.findall(rf'^{name}{{node="([^"]+)"}} (\S+)$', text, re.MULTILINE)}


@pytest.mark.cluster
def test_metrics_show_each_masters_memory_and_its_limit(redis_url, clean_redis, backend):
    app = make_app(redis_url)
    with app.test_client() as client:
        text = client.get("/metrics").get_data(as_text=True)
    used = _gauges(text, "patience_redis_used_memory_bytes")
    limits = _gauges(text, "patience_redis_maxmemory_bytes")
    assert len(used) == (3 if backend == "cluster" else 1), text[-2000:]
    assert set(limits) == set(used)
    assert all(value > 0 for value in used.values())
    assert "# TYPE patience_redis_maxmemory_bytes gauge" in text


def test_metrics_answer_without_redis():
    app = make_app("redis://127.0.0.1:1/0", REDIS_CONNECT_TIMEOUT=0.2)
    with app.test_client() as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert "# TYPE patience_redis_used_memory_bytes gauge" in text
    assert not _gauges(text, "patience_redis_used_memory_bytes")
