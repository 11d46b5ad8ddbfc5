"""The figures the deploy tests measure: recorded by the tests (:func:`record`) each with
the bound it must keep, asserted there, printed at the end of the run ("deploy figures")
and written to tests/artifacts/deploy-figures.json with their bounds.

A figure is ``(value, bound)``, the bound one of :func:`at_most`, :func:`at_least`,
:func:`equal`, :func:`between`, :func:`one_of`, :func:`starts_with`; :func:`record` takes
nothing else, so no figure is printed that no test checked.

A plugin of the root conftest, so that its summary runs where the terminal is: under
pytest-xdist that is the controller, which collects nothing and so never loads
tests/deploy/conftest.py; each worker leaves its figures in a file of its own
(``deploy-figures.<worker>.json``) at the end of its session, and the controller
gathers them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACT = ROOT / "tests" / "artifacts" / "deploy-figures.json"

FIGURES: dict[str, dict] = {}
_STARTED = time.time()


@dataclass(frozen=True)
class Bound:
    """What a figure must be: ``text`` says it, ``holds`` checks a value."""

    text: str
    holds: Callable[[object], bool]


def at_most(limit: float) -> Bound:
    return Bound(f"at most {limit}", lambda value: value is not None and value <= limit)


def at_least(limit: float) -> Bound:
    return Bound(f"at least {limit}", lambda value: value is not None and value >= limit)


def between(low: float, high: float) -> Bound:
    return Bound(f"between {low} and {high}",
                 lambda value: value is not None and low <= value <= high)


def equal(expected: object) -> Bound:
    return Bound(f"equal to {expected!r}", lambda value: value == expected)


def one_of(*choices: object) -> Bound:
    return Bound(f"one of {', '.join(map(repr, choices))}", lambda value: value in choices)


def starts_with(*prefixes: str) -> Bound:
    return Bound(f"starting with {' or '.join(map(repr, prefixes))}",
                 lambda value: isinstance(value, str) and value.startswith(prefixes))


def record(section: str, *, detail: object = None, **figures: tuple[object, Bound]) -> None:
    """Records each figure under ``section`` with its bound, then asserts that every one
    keeps its bound (all are recorded first, so a failure still shows them all; the
    failure's message ends with ``detail``, when given)."""
    broken = []
    for name, figure in figures.items():
        if not (isinstance(figure, tuple) and len(figure) == 2
                and isinstance(figure[1], Bound)):
            raise TypeError(f"{section}: {name} is not (value, bound): {figure!r}")
        value, bound = figure
        FIGURES.setdefault(section, {})[name] = {"value": value, "bound": bound.text}
        if not bound.holds(value):
            broken.append(f"{name} = {value!r}, not {bound.text}")
    assert not broken, f"{section}: {'; '.join(broken)}" + (f" ({detail})" if detail else "")


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
                FIGURES.setdefault(section, {}).update(values)
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
        for name, figure in values.items():
            terminalreporter.write_line(f"    {name}: {figure['value']} "
                                        f"({figure['bound']})")
    terminalreporter.write_line(f"(also in {ARTIFACT.relative_to(ROOT)})")
