"""The gunicorn groups' settings (service/runtime/), loaded the way gunicorn does (it
imports the module) in a process of its own:

- the events group does not promise more streams than it has file descriptors for:
  EVENTS_MAX_STREAMS is lowered to the open-file limit less a reserve, after the soft
  limit was raised as far as the hard limit allows (each case starts with its limits);
- SSE_MAX_STREAMS' one rule: a process that serves streams on its threads holds at most
  SSE_MAX_STREAMS, unset its threads (GUNICORN_THREADS) less a quarter;
- every setting is read once, when the part starts: changing the environment later
  changes nothing, and only service/config.py reads the environment;
- loading them adds nothing to the environment and makes no directory: the metrics
  directory is the arbiter's to make, once, when it starts."""

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from service import config
from service.runtime import shared

ROOT = Path(__file__).resolve().parent.parent
RESERVE = 256

_LOAD = """
import json, os, resource, runpy, sys, tempfile
before, temporary = dict(os.environ), set(os.listdir(tempfile.gettempdir()))
settings = runpy.run_module(sys.argv[1])
print(json.dumps({"max_streams": settings.get("max_streams"),
                  "worker_connections": settings.get("worker_connections"),
                  "threads": settings.get("threads"),
                  "next_request_wait": settings.get("next_request_wait"),
                  "environment": dict(set(os.environ.items()) - set(before.items())),
                  "made": sorted(set(os.listdir(tempfile.gettempdir())) - temporary),
                  "limit": resource.getrlimit(resource.RLIMIT_NOFILE),
                  "metrics_client": "prometheus_client" in sys.modules}))
"""
_SETTINGS = ("EVENTS_MAX_STREAMS", "SSE_MAX_STREAMS", "GUNICORN_THREADS",
             "PROMETHEUS_MULTIPROC_DIR", "KEEPALIVE_WAIT_SECONDS", "GC_FREEZE",
             "ACCEPT_BALANCE", "WEB_CONCURRENCY", "REQUEST_SLOTS", "REQUEST_SLOT_WAIT_SECONDS")


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
    # prometheus-client reads PROMETHEUS_MULTIPROC_DIR once, when imported: the arbiter
    # names the directory when it starts (on_starting), after loading this, and its
    # processes inherit the client as the arbiter imported it.
    assert not loaded["metrics_client"], "loading the settings imported prometheus-client"
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
def test_a_request_process_keeps_a_quarter_of_its_threads_for_moves(threads, cap,
                                                                    monkeypatch):
    env = {} if threads is None else {"GUNICORN_THREADS": threads}
    loaded, _notice = _load(1000, 1000, None, module="service.runtime.request_group", **env)
    assert loaded["threads"] == int(threads or 64)
    assert loaded["max_streams"] is None  # the group sets no cap of its own: the app's
    monkeypatch.delenv("SSE_MAX_STREAMS", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if threads is None:
        monkeypatch.delenv("GUNICORN_THREADS", raising=False)
    assert config.read_config()["SSE_MAX_STREAMS"] == cap


@pytest.mark.parametrize(("given", "threads", "cap"), [("7", "16", 7), ("100", "64", 100),
                                                       ("", "16", 12), (None, "64", 48)])
def test_sse_max_streams_one_rule(given, threads, cap, monkeypatch):
    """SSE_MAX_STREAMS when set, else GUNICORN_THREADS less a quarter: one default (unset),
    one rule, for the app under gunicorn and outside it alike."""
    assert config.SETTINGS["SSE_MAX_STREAMS"].default is None
    monkeypatch.setenv("GUNICORN_THREADS", threads)
    if given is None:
        monkeypatch.delenv("SSE_MAX_STREAMS", raising=False)
    else:
        monkeypatch.setenv("SSE_MAX_STREAMS", given)
    assert config.read_config()["SSE_MAX_STREAMS"] == cap
    assert config.stream_cap(None if not given else int(given), int(threads)) == cap


@pytest.mark.parametrize(("given", "wait"), [(None, 0.05), ("0.2", 0.2), ("0", 0.0)])
def test_keepalive_wait_seconds_sets_the_request_groups_wait(given, wait):
    env = {} if given is None else {"KEEPALIVE_WAIT_SECONDS": given}
    loaded, _notice = _load(1000, 1000, None, module="service.runtime.request_group", **env)
    assert loaded["next_request_wait"] == wait


_READ_ONCE = """
import json, os, runpy, sys, types
settings = runpy.run_module("service.runtime.request_group")
from service.runtime.request_process import RequestProcess
os.environ.update(KEEPALIVE_WAIT_SECONDS="9", EVENTS_HANDOFF_SOCKET="/changed/later")
process = types.SimpleNamespace(wsgi=None)
settings["post_worker_init"](process)
print(json.dumps({"wait": process.next_request_wait, "socket": process.handoff_socket,
                  "class_socket": RequestProcess.handoff_socket}))
"""


def test_a_request_process_reads_its_settings_once_when_it_starts(tmp_path):
    """The wait for a kept-alive connection's next request and the hand-off socket are read
    when the group starts, and given to each process when it starts: changing the
    environment afterwards changes neither."""
    env = {key: value for key, value in os.environ.items() if key not in _SETTINGS}
    env.update(KEEPALIVE_WAIT_SECONDS="0.2", EVENTS_HANDOFF_SOCKET=str(tmp_path / "events"))
    result = subprocess.run([sys.executable, "-c", _READ_ONCE], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"wait": 0.2, "socket": str(tmp_path / "events"),
                                         "class_socket": None}


_FREEZE = """
import gc, json, runpy, types
settings = runpy.run_module("service.runtime.request_group")
before = gc.get_freeze_count()
app = object()
process = types.SimpleNamespace(wsgi=app)
settings["post_worker_init"](process)
turns = process.wsgi
print(json.dumps({"before": before, "after": gc.get_freeze_count(),
                  "balance": process.accept_balance,
                  "slots": None if process.shares is None else len(process.shares.counts),
                  "turns": None if turns is app else
                  [turns.wsgi_app is app, turns.slots, turns.max_wait]}))
"""


@pytest.mark.parametrize(("env", "frozen", "balance", "slots", "turns"), [
    ({}, True, 1, 8, [True, 1, 0.02]),
    ({"GC_FREEZE": "false", "ACCEPT_BALANCE": "-1", "REQUEST_SLOTS": "0"}, False, -1, None,
     None),
    ({"ACCEPT_BALANCE": "0", "WEB_CONCURRENCY": "6", "REQUEST_SLOTS": "3",
      "REQUEST_SLOT_WAIT_SECONDS": "0.5"}, True, 0, 12, [True, 3, 0.5])])
def test_a_request_process_freezes_what_the_app_made_and_shares_its_counts(
        env, frozen, balance, slots, turns):
    """GC_FREEZE: a request process freezes what exists when it starts serving (the
    app's objects: full collections leave them alone).  ACCEPT_BALANCE: the process gets
    the group's connection counts, a slot per process and as many again (none: -1).
    REQUEST_SLOTS: its app is let through in turns (service/runtime/slots.py; 0: not)."""
    environ = {key: value for key, value in os.environ.items() if key not in _SETTINGS}
    result = subprocess.run([sys.executable, "-c", _FREEZE], cwd=ROOT,
                            env={**environ, **env}, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["before"] == 0
    assert (found["after"] > 1000) == frozen, found
    assert (found["balance"], found["slots"]) == (balance, slots)
    assert found["turns"] == turns


@pytest.mark.parametrize("env", [{"REQUEST_SLOTS": "-1"},
                                 {"REQUEST_SLOT_WAIT_SECONDS": "-0.1"}])
def test_negative_turns_are_refused_when_the_group_loads(env):
    environ = {key: value for key, value in os.environ.items() if key not in _SETTINGS}
    result = subprocess.run([sys.executable, "-c", _FREEZE], cwd=ROOT,
                            env={**environ, **env}, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0
    assert "REQUEST_SLOTS and REQUEST_SLOT_WAIT_SECONDS cannot be negative" in result.stderr


def test_only_the_configuration_reads_the_environment():
    """Every setting is read in service/config.py, and nowhere else in the package."""
    package = ROOT / "service"
    readers = sorted(str(path.relative_to(ROOT)) for path in package.rglob("*.py")
                     if re.search(r"os\.environ|getenv", path.read_text())
                     and path != package / "config.py")
    assert readers == []


def test_each_part_reads_its_own_settings():
    for part in config.PARTS:
        names = set(config.read_config()) if part == config.APP else \
            set(config.process_settings(part))
        expected = {name for name, setting in config.SETTINGS.items()
                    if part in setting.parts}
        assert expected <= names
    with pytest.raises(ValueError, match="no part"):
        config.process_settings("the arbiter")


def test_a_bad_setting_names_its_variable(monkeypatch):
    monkeypatch.setenv("GUNICORN_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="GUNICORN_TIMEOUT must be an integer, not 'soon'"):
        config.process_settings(config.GROUPS)


def test_the_arbiter_makes_the_metrics_directory_when_it_starts(monkeypatch):
    # Set, then removed: monkeypatch removes what on_starting sets once the test ends
    # (a delenv of an unset variable alone would leave it in this process's environment).
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    monkeypatch.setitem(shared.settings, "PROMETHEUS_MULTIPROC_DIR", None)
    shared.on_starting(None)
    made = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    try:
        assert made.is_dir()
        assert list(made.iterdir()) == []
        assert shared.settings["PROMETHEUS_MULTIPROC_DIR"] == str(made)
        shared.on_starting(None)  # once: a second call keeps it
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(made)
        (made / "counter_1.db").write_bytes(b"")
        shared.on_exit(SimpleNamespace(reexec_pid=4321))  # handed over to a new arbiter
        assert made.is_dir()
        shared.on_exit(SimpleNamespace(reexec_pid=0))
        assert not made.exists()
    finally:
        shutil.rmtree(made, ignore_errors=True)


def test_a_given_metrics_directory_is_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    settings = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    assert config.prepare_process_environment(settings) is None  # not made: never removed
    assert settings == {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path)


@pytest.mark.parametrize("module", ["service.runtime.request_group",
                                    "service.runtime.events_group"])
def test_gunicorn_takes_every_setting_of_a_group(module):
    """Every name of the module that gunicorn knows is a valid value of that setting
    (gunicorn reads every module-level name of its settings module)."""
    from gunicorn.config import Config

    loaded = __import__(module, fromlist=["bind"])
    gunicorn = Config()
    taken = {name for name in vars(loaded) if name in gunicorn.settings}
    for name in taken:
        gunicorn.set(name, getattr(loaded, name))
    assert {"bind", "workers", "worker_class", "timeout", "keepalive", "loglevel"} <= taken
