"""The events group's settings (service/runtime/events_group.py) do not promise more
streams than the group has file descriptors for: EVENTS_MAX_STREAMS is lowered to the
open-file limit less a reserve, after the soft limit was raised as far as the hard limit
allows.  Each case loads the settings the way gunicorn does (imports the module) in a
process of its own, started with the open-file limits of the case."""

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESERVE = 256

_LOAD = """
import json, os, resource, runpy
settings = runpy.run_module("service.runtime.events_group")
print(json.dumps({"max_streams": settings["max_streams"],
                  "worker_connections": settings["worker_connections"],
                  "sse_max_streams": os.environ["SSE_MAX_STREAMS"],
                  "limit": resource.getrlimit(resource.RLIMIT_NOFILE)}))
"""


def _load(soft: int, hard: int, wanted: str | None) -> tuple[dict, str]:
    env = {key: value for key, value in os.environ.items() if key != "EVENTS_MAX_STREAMS"}
    if wanted is not None:
        env["EVENTS_MAX_STREAMS"] = wanted
    result = subprocess.run(
        [sys.executable, "-c", _LOAD], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


_, HARD = resource.getrlimit(resource.RLIMIT_NOFILE)
needs_2500 = pytest.mark.skipif(HARD != resource.RLIM_INFINITY and HARD < 2500,
                                reason=f"this process's hard open-file limit is {HARD}")


def test_the_default_is_lowered_to_what_the_hard_limit_allows():
    loaded, notice = _load(1000, 1000, None)
    assert loaded["max_streams"] == 1000 - RESERVE
    assert loaded["sse_max_streams"] == str(1000 - RESERVE)
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
