"""A master of a Redis Cluster killed (SIGKILL) while games are played through gunicorn:
its replica is promoted, the service answers 503 with Retry-After in the gap (never
anything else), recovers by itself, and with writes confirmed by a replica
(REDIS_WAIT_REPLICAS=1, the default on a cluster) no acknowledged move is lost nor
applied twice.  ``python -m bench cluster --failover`` runs the same with the figures,
and with REDIS_WAIT_REPLICAS=0 too."""

import pytest

from bench.cluster import failover


@pytest.mark.timeout(120)
def test_a_killed_master_loses_no_acknowledged_move(tmp_path):
    result = failover(tmp_path, wait_replicas=1, games=9, players=3, before=1.0, after=0.5)
    print(result.summary())
    assert result.games_hit >= 1
    assert result.acknowledged > 100
    assert result.lost == 0
    assert result.extra == 0
    assert result.unavailable > 0  # the gap was seen ...
    assert result.without_retry_after == 0  # ... as 503 with Retry-After
    assert result.other == {}  # and nothing else: no 500, no refusal, no lost connection
    assert 0 < result.seconds_of_503 < 20
