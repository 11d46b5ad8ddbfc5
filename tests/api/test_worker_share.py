"""The solver's worker keeps within its CPU share (``WORKER_CPU_SHARE``): a real worker
process on the tests' Redis, searching a Four Corners pool that keeps missing, its CPU
time read from /proc; and an analysis does not wait for the rest the share asks for."""

from __future__ import annotations

import os
from datetime import datetime

import pytest

from devtools.launch import start_worker
from devtools.processes import threads
from tests.api.support import auth, create, make_app
from tests.solver_worker import WorkerProcess, cpu_seconds, quickly_won_seed, wait_for

#: A pool no search fills: Four Corners' deals are seldom won, and one found would not
#: fill it.
MISSING = "four-corners=1000"


@pytest.fixture
def own_url(redis_url, clean_redis):
    """A database of the session's Redis that no other worker of the tests fills."""
    return redis_url.rsplit("/", 1)[0] + "/3"


def pool_searches(worker: WorkerProcess) -> list[dict]:
    return [line for line in worker.lines() if line.get("message") == "pool search"]


def _when(line: dict) -> float:
    return datetime.fromisoformat(line["time"]).timestamp()


def test_the_worker_keeps_within_its_cpu_share(own_url, tmp_path):
    share, deal = 0.1, 0.2     # a search of 0.2 s of CPU, then 2 s of rest
    with WorkerProcess(own_url, tmp_path / "worker.log", WORKER_CPU_SHARE=str(share),
                       WINNABLE_DEAL_SECONDS=str(deal), WINNABLE_POOL=MISSING) as worker:
        cpu, wall = cpu_seconds(worker.pid), datetime.now().timestamp()
        searches = wait_for(lambda: len(found := pool_searches(worker)) >= 5 and found,
                            seconds=240, what="5 pool searches", step=0.1)
        used = cpu_seconds(worker.pid) - cpu
        elapsed = datetime.now().timestamp() - wall
    # Whenever a search starts, the worker's CPU since the start is within its share of
    # the time since: after the fifth search, the share of the whole time plus that one
    # search (and 0.3 s for what one search costs beyond its budget and the clock
    # ticks).  Without a share the worker would use every CPU second the machine gives
    # it: 1 s in the time these five searches take back to back.
    assert used <= share * elapsed + deal + 0.3, (used, elapsed)
    # It did search, five times: /proc counts at least the CPU the worker logged for them
    # (less than five budgets when a deal is proved lost early).
    assert used >= 0.9 * sum(line["cpu_ms"] for line in searches[:5]) / 1000, (used, searches)
    # Between two searches it rested as long as it said: its CPU over the share, less
    # the wall-clock time the search took (on a busy machine a search of 0.2 s of CPU
    # takes longer, and that time counts towards the share already).
    for before, after in zip(searches, searches[1:5], strict=False):
        owed = before["cpu_ms"] / 1000 / share - before["duration_ms"] / 1000
        assert before["rest_s"] >= 0.9 * owed - 0.5, before
        started = _when(after) - after["duration_ms"] / 1000
        assert started - _when(before) >= before["rest_s"] - 0.2, (before, after)


def test_the_worker_searches_at_its_lower_priority_and_does_the_rest_at_the_api_s(
        own_url, tmp_path):
    """``WORKER_NICE`` lowers the priority of the thread that searches, not of the loop
    that sweeps and closes the days (a busy API must not starve a day's close)."""
    with WorkerProcess(own_url, tmp_path / "worker.log", WORKER_NICE="7",
                       WINNABLE_DEAL_SECONDS="0.3", WINNABLE_POOL=MISSING) as worker:
        def enough() -> list[dict] | None:
            found = pool_searches(worker)
            return found if sum(line["cpu_ms"] for line in found) >= 500 else None

        searches = wait_for(enough, seconds=120, what="pool searches of 0.5 s of CPU",
                            step=0.1)
        tasks = threads(worker.pid)
    started = next(line for line in worker.lines() if line.get("message") == "worker started")
    assert started["nice"] == 7
    main_nice = tasks[worker.pid].nice
    assert main_nice == os.getpriority(os.PRIO_PROCESS, 0)  # the API's, as started
    niced = [task.cpu for task in tasks.values() if task.nice == min(main_nice + 7, 19)]
    assert len(niced) == 1, tasks
    # The searches' CPU was the niced thread's (the main thread's is the start's, the
    # loop's looks and its sweeps).
    searched = sum(line["cpu_ms"] for line in searches) / 1000
    assert niced[0] >= 0.9 * searched - 0.02, (tasks, searched)


#: The rest after a pool search in which the analysis below is asked for: ample for the
#: test to ask for it in, however busy the machine.
LONG_REST = 10.0


# Its waits, each of which fails with its own message: the worker's start (20 s), a
# search with a long rest (60 s), the analysis (30 s).
@pytest.mark.timeout(120)
def test_an_analysis_does_not_wait_for_the_share(own_url, tmp_path):
    # A share so small that after a search the worker rests for 100 times its CPU: 30 s
    # after a search that used its budget of 0.3 s, a second or less after one whose deal
    # was proved lost in a few hundred positions (now and then a Four Corners deal is):
    # the test waits for a search followed by LONG_REST or more.  (At 0.002 the first
    # search waited 17 s to over a minute on a busy machine: the worker's CPU before it,
    # and its idle looks at its work, about 0.001 of a core, count too.)  An analysis
    # asked for in that rest is computed at once all the same.
    with WorkerProcess(own_url, tmp_path / "worker.log", WORKER_CPU_SHARE="0.01",
                       WINNABLE_DEAL_SECONDS="0.3", WINNABLE_POOL=MISSING,
                       ANALYSIS_SECONDS="2") as worker:
        # The game is over before the worker's first search, so that the analysis is
        # asked for as soon as that search is seen.
        app = make_app(own_url, ANALYSIS_INLINE_SECONDS=0)  # the worker searches
        client = app.test_client()
        seed = quickly_won_seed("salic-law")
        game, token, _response = create(client, "salic-law", seed=seed)
        client.post(f"/v1/games/{game['id']}/moves", json={"type": "resign"},
                    headers=auth(token))
        url = f"/v1/games/{game['id']}/analysis"
        first = wait_for(lambda: [line for line in pool_searches(worker)
                                  if line["rest_s"] >= LONG_REST],
                         seconds=60, what=f"a pool search then a rest of {LONG_REST:g} s")[0]
        assert client.get(url).status_code == 202
        done = wait_for(lambda: (answer := client.get(url)).status_code == 200 and answer,
                        seconds=30, what="the analysis", step=0.2)
        assert done.get_json()["winnable"] is True
        # Started within the rest the worker gave after that search (its CPU over the
        # share: the rest ends no sooner, the CPU of its looks at the job list only adds
        # to it), and done before the pools' next search started.
        analysed = [line for line in worker.lines() if line.get("message") == "analysis"]
        assert [line["outcome"] for line in analysed] == ["stored"]
        started = _when(analysed[0]) - analysed[0]["duration_ms"] / 1000
        assert started - _when(first) < first["rest_s"], (first, analysed)
        assert all(_when(later) - later["duration_ms"] / 1000 > _when(analysed[0])
                   for later in pool_searches(worker) if _when(later) > _when(first))
        app.services.backend.close()
        assert 500 not in app.statuses


@pytest.mark.parametrize("share", ["0", "-0.1", "1.5", "two"])
def test_a_share_that_is_no_fraction_of_a_core_stops_the_worker(own_url, tmp_path, share):
    log = tmp_path / "worker.log"
    with open(log, "wb") as sink:
        process = start_worker(dict(os.environ, REDIS_URL=own_url, WORKER_CPU_SHARE=share),
                               output=sink)
    assert process.wait(30) == 2
    assert "bad configuration" in log.read_text()
    assert "WORKER_CPU_SHARE" in log.read_text()
