"""The engine's layers: the rules never read the searches, the searches never read the
hints, no module imports another inside a function; each variant's searches come from
the registry, and a variant that registered none is searched by the plain search."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from service.engine import LOST, WON, State, get_variant, variants
from service.engine.rules.clock import Clock
from service.engine.search import (
    Budget,
    Outcome,
    Searches,
    exhaustive_search,
    hint_line,
    searches_of,
    solve_state,
)
from service.engine.search.registry import PLAIN, register

from . import solver_positions

ENGINE = Path(__file__).resolve().parents[2] / "service" / "engine"

#: The rules: what a game is, what a player sees, the journal of a game.
RULES = ("base", "registry", "cards", "errors", "moves", "journal", "visible", "rules")


def _imports(path: Path) -> list[tuple[str, bool]]:
    """The engine modules ``path`` imports (dotted, from ``service.engine``), each with
    whether the import is inside a function."""
    tree = ast.parse(path.read_text())
    package = path.relative_to(ENGINE).parent.parts
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside.update(id(child) for child in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            if node.module:
                names = [".".join((*base, node.module))]
            else:
                names = [".".join((*base, alias.name)) for alias in node.names]
            found += [(name, id(node) in inside) for name in names]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if module and module.startswith("service.engine"):
                found.append((module.removeprefix("service.engine").lstrip("."),
                              id(node) in inside))
    return found


MODULES = sorted(ENGINE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ENGINE)))
def test_no_engine_module_imports_inside_a_function(path):
    assert [name for name, inside in _imports(path) if inside] == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ENGINE)))
def test_the_rules_never_read_the_searches_nor_the_searches_the_hints(path):
    part = path.relative_to(ENGINE).parts[0].removesuffix(".py")
    imported = {name.split(".")[0] for name, _inside in _imports(path)}
    if part in RULES:
        assert imported <= set(RULES), imported
    if part == "search":
        assert imported <= {*RULES, "search"}, imported


def test_every_game_registers_its_solver_search():
    for variant in variants():
        searches = searches_of(variant)
        assert searches is not PLAIN
        assert searches.solver is not None
        assert searches.solver.__module__ == f"service.engine.search.{variant.id.replace('-', '_')}"
    assert searches_of(get_variant("salic-law")).hint_positions_scale == 4
    assert searches_of(get_variant("clock")).hint_positions_scale == 1


def test_a_variant_registers_its_searches_once():
    with pytest.raises(ValueError, match="registered already"):
        register(Clock, Searches())


class _PlainClock(Clock):
    """The Clock's rules under another id, with no search registered (never put in the
    variant registry)."""

    id = "plain-clock"


def test_a_variant_with_no_search_of_its_own_gets_the_plain_search():
    plain = _PlainClock()
    assert searches_of(plain) is PLAIN
    rng = random.Random("a plain variant")
    settled = set()
    for _ in range(12):
        crafted = solver_positions.clock(rng, 14, 4, 4)
        state = State(plain, crafted.piles, crafted.status, crafted.turn)
        assert hint_line(state) is None
        result, moves = exhaustive_search(state, Budget(30_000, 1e9))
        solution = solve_state(state, max_positions=30_000, max_seconds=1e9)
        assert solution.result == result
        if result == Outcome.WON:
            assert [step.move for step in solution.line] == moves
        settled.add(result)
    assert {Outcome.WON, Outcome.LOST} <= settled


def test_outcomes_are_not_game_statuses():
    assert [outcome.value for outcome in Outcome] == ["won", "lost", "undecided"]
    # The statuses stay plain words; only a search answers an Outcome.
    assert not isinstance(WON, Outcome)
    assert not isinstance(LOST, Outcome)
    won = solve_state(get_variant("salic-law").deal(2), max_positions=20_000, max_seconds=1e9)
    assert won.result is Outcome.WON
