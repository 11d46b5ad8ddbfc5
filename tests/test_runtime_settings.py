"""The gunicorn groups' settings (service/runtime/), loaded the way gunicorn does (it
imports the module) in a process of its own:

- the events group does not promise more streams than it has file descriptors for:
  EVENTS_MAX_STREAMS is lowered to the open-file limit less a reserve, after the soft
  limit was raised as far as the hard limit allows (each case starts with its limits);
- the request group serves at most its threads less a quarter itself, or SSE_MAX_STREAMS;
- loading them adds nothing to the environment and makes no directory: the metrics
  directory is the arbiter's to make, once, when it starts."""

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from service.runtime import shared

ROOT = Path(__file__).resolve().parent.parent
RESERVE = 256

_LOAD = """
import json, os, resource, runpy, sys, tempfile
before, temporary = dict(os.environ), set(os.listdir(tempfile.gettempdir()))
settings = runpy.run_module(sys.argv[1])
print(json.dumps({"max_streams": settings["max_streams"],
                  "worker_connections": settings.get("worker_connections"),
                  "threads": settings.get("threads"),
                  "next_request_wait": settings.get("next_request_wait"),
                  "environment": dict(set(os.environ.items()) - set(before.items())),
                  "made": sorted(set(os.listdir(tempfile.gettempdir())) - temporary),
                  "limit": resource.getrlimit(resource.RLIMIT_NOFILE)}))
"""
_SETTINGS = ("EVENTS_MAX_STREAMS", "SSE_MAX_STREAMS", "GUNICORN_THREADS",
             "PROMETHEUS_MULTIPROC_DIR", "KEEPALIVE_WAIT_SECONDS")


def _load(soft: int, hard: int, wanted: str | None, *,
          module: str = "service.runtime.events_group", **env: str) -> tuple[dict, str]:
    env = {key: value for key, value in os.environ.items() if key not in _SETTINGS} | env
    if wanted is not None:
        env["EVENTS_MAX_STREAMS"] = wanted
    env["TMPDIR"] = tempfile.mkdtemp(prefix="settings-")  # only what this load makes
    result = subprocess.run(
        [sys.executable, "-c", _LOAD, module], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)))
    shutil.rmtree(env["TMPDIR"], ignore_errors=True)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert loaded["environment"] == {}  # nothing passed on through the environment
    assert loaded["made"] == []  # and no directory made on import
    return loaded, result.stderr


_, HARD = resource.getrlimit(resource.RLIMIT_NOFILE)
needs_2500 = pytest.mark.skipif(HARD != resource.RLIM_INFINITY and HARD < 2500,
                                reason=f"this process's hard open-file limit is {HARD}")


def test_the_default_is_lowered_to_what_the_hard_limit_allows():
    loaded, notice = _load(1000, 1000, None)
    assert loaded["max_streams"] == 1000 - RESERVE
    assert loaded["worker_connections"] == 1000
    assert notice == ""  # nothing was asked for


def test_a_wish_beyond_the_limit_is_lowered_and_said():
    loaded, notice = _load(1000, 1000, "5000")
    assert loaded["max_streams"] == 1000 - RESERVE
    assert "EVENTS_MAX_STREAMS=5000 lowered to 744" in notice


@needs_2500
def test_the_soft_limit_is_raised_as_far_as_needed():
    loaded, notice = _load(1000, 2500, "2000")
    assert loaded["max_streams"] == 2000
    assert loaded["limit"] == [2000 + RESERVE, 2500]
    assert notice == ""
    loaded, notice = _load(1000, 2500, "4000")  # the hard limit stops it
    assert loaded["max_streams"] == 2500 - RESERVE
    assert loaded["limit"] == [2500, 2500]
    assert "lowered to 2244" in notice


def test_a_wish_within_the_limit_is_kept():
    loaded, notice = _load(1000, 1000, "100")
    assert loaded["max_streams"] == 100
    assert loaded["worker_connections"] == 100 + RESERVE
    assert loaded["limit"] == [1000, 1000]  # no need to raise it
    assert notice == ""


@pytest.mark.parametrize(("threads", "cap"), [(None, 48), ("64", 48), ("16", 12),
                                               ("8", 4), ("4", 1)])
def test_a_request_process_keeps_a_quarter_of_its_threads_for_moves(threads, cap):
    env = {} if threads is None else {"GUNICORN_THREADS": threads}
    loaded, _notice = _load(1000, 1000, None, module="service.runtime.request_group", **env)
    assert loaded["max_streams"] == cap
    assert loaded["threads"] == int(threads or 64)


def test_sse_max_streams_sets_the_request_groups_cap():
    loaded, _notice = _load(1000, 1000, None, module="service.runtime.request_group",
                            SSE_MAX_STREAMS="7", GUNICORN_THREADS="16")
    assert loaded["max_streams"] == 7


@pytest.mark.parametrize(("given", "wait"), [(None, 0.05), ("0.2", 0.2), ("0", 0.0)])
def test_keepalive_wait_seconds_sets_the_request_groups_wait(given, wait):
    env = {} if given is None else {"KEEPALIVE_WAIT_SECONDS": given}
    loaded, _notice = _load(1000, 1000, None, module="service.runtime.request_group", **env)
    assert loaded["next_request_wait"] == wait


def test_the_arbiter_makes_the_metrics_directory_when_it_starts(monkeypatch):
    # Set, then removed: monkeypatch removes what on_starting sets once the test ends
    # (a delenv of an unset variable alone would leave it in this process's environment).
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    shared.on_starting(None)
    made = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    try:
        assert made.is_dir()
        assert list(made.iterdir()) == []
        shared.on_starting(None)  # once: a second call keeps it
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(made)
    finally:
        made.rmdir()


def test_a_given_metrics_directory_is_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    shared.on_starting(None)
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path)
