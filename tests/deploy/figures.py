"""The figures the deploy tests measure: recorded by the tests (:func:`record`), printed
at the end of the run ("deploy figures") and written to tests/artifacts/deploy-figures.json.

A plugin of the root conftest, so that its summary runs where the terminal is: under
pytest-xdist that is the controller, which collects nothing and so never loads
tests/deploy/conftest.py; each worker leaves its figures in a file of its own
(``deploy-figures.<worker>.json``) at the end of its session, and the controller
gathers them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACT = ROOT / "tests" / "artifacts" / "deploy-figures.json"

FIGURES: dict[str, dict] = {}
_STARTED = time.time()


def record(section: str, **values) -> None:
    """Adds measured figures under ``section`` (printed and written at the end)."""
    FIGURES.setdefault(section, {}).update(values)


def worker() -> str | None:
    """The pytest-xdist worker this process is (gw0, gw1...), None without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def _worker_file(name: str) -> Path:
    return ARTIFACT.with_name(f"deploy-figures.{name}.json")


def pytest_sessionfinish(session):
    """A worker's figures go to a file of its own, for the controller to gather."""
    if worker() is not None and FIGURES:
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        _worker_file(worker()).write_text(json.dumps(FIGURES))


def _gather() -> None:
    for path in sorted(ARTIFACT.parent.glob("deploy-figures.gw*.json")):
        if path.stat().st_mtime >= _STARTED:  # not one a run before left
            for section, values in json.loads(path.read_text()).items():
                record(section, **values)
        path.unlink()


def pytest_terminal_summary(terminalreporter):
    if worker() is not None:
        return
    _gather()
    if not FIGURES:
        return
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(json.dumps(FIGURES, indent=2, sort_keys=True) + "\n")
    terminalreporter.section("deploy figures")
    for section, values in FIGURES.items():
        terminalreporter.write_line(f"{section}:")
        for name, value in values.items():
            terminalreporter.write_line(f"    {name}: {value}")
    terminalreporter.write_line(f"(also in {ARTIFACT.relative_to(ROOT)})")
