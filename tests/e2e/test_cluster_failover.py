"""A master of a Redis Cluster dies for good while games are played and followed through
gunicorn, and never comes back: killed (SIGKILL: its connections close at once) or
frozen (SIGSTOP: it answers nothing and closes nothing, as a host that vanished).  With
two replicas per master, one is promoted and the other follows it, so with writes
confirmed by a replica (REDIS_WAIT_REPLICAS=1, the default on a cluster):

- the games of the other shards never fail, during and after the failover;
- the lost shard's games answer reads and writes again within 3 s of the promotion, and
  nothing but 503 with Retry-After in the gap;
- no acknowledged move is lost nor applied twice;
- followers of a game of each shard get every version once (resuming with
  Last-Event-ID when a stream ends).

``python -m bench cluster --failover`` runs the same with the figures."""

import pytest

from bench.cluster import failover


@pytest.mark.timeout(150)
@pytest.mark.parametrize("fault", ["kill", "freeze"])
def test_a_master_lost_for_good_stops_nothing_but_its_own_games_briefly(tmp_path, fault):
    result = failover(tmp_path, wait_replicas=1, replicas=2, games=9, before=1.0,
                      after=0.5, fault=fault)
    print(result.summary())
    assert result.games_hit >= 1
    assert result.acknowledged > 50
    assert result.healthy_requests > 100
    assert result.healthy_failed == {}  # the other shards never failed
    assert result.lost == 0
    assert result.extra == 0
    assert result.unavailable > 0  # the gap was seen ...
    assert result.without_retry_after == 0  # ... as 503 with Retry-After
    assert result.other == {}  # and nothing else: no 500, no refusal, no lost connection
    assert result.reads_back_after <= 3.0
    assert result.writes_back_after <= 3.0
    assert result.feed_gaps == 0
    assert result.silent_streams == 0  # the live feed moved off the dead node by itself
    assert result.not_ready == {}  # the process stayed ready: a load balancer keeps it
