"""The solver's worker touches WORKER_HEARTBEAT_FILE after each turn of its loop that
reached Redis (the compose files' health check reads its age), and stops touching it
while Redis cannot be reached."""

import time

from tests.solver_worker import WorkerProcess, wait_for


def test_the_worker_touches_its_heartbeat_while_it_reaches_redis(redis_url, clean_redis,
                                                                 tmp_path):
    heartbeat = tmp_path / "heartbeat"
    with WorkerProcess(redis_url, tmp_path / "worker.log", WORKER_HEARTBEAT_FILE=str(heartbeat),
                       WINNABLE_POOL="clock=0"):
        wait_for(heartbeat.exists, seconds=10, what="the first heartbeat")
        first = heartbeat.stat().st_mtime
        wait_for(lambda: heartbeat.stat().st_mtime > first, seconds=10, what="a later one")


def test_no_heartbeat_while_redis_is_down(tmp_path):
    heartbeat = tmp_path / "heartbeat"
    with WorkerProcess("redis://127.0.0.1:1/0", tmp_path / "worker.log",
                       WORKER_HEARTBEAT_FILE=str(heartbeat), WINNABLE_POOL="clock=0"):
        time.sleep(2.0)
        assert not heartbeat.exists()
