"""The service's layers: each package of ``service/`` imports only the layers below its
own, so the packages form no cycle; ``docs/architecture.md`` draws the same rule.

The engine's own layers (the rules, the searches, the hints) are kept by
``tests/engine/test_layers.py``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVICE = ROOT / "service"

#: The layers, top first.  A module may import its own package, and any package of a
#: layer below its own; never one of its own layer's other packages, nor one above.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("runtime",),
    ("app",),
    ("api",),
    ("services",),
    ("live", "solver"),
    ("daily",),
    ("players",),
    ("game",),
    ("storage",),
    ("observability",),
    ("config",),
    ("engine",),
)

RANK = {package: rank for rank, layer in enumerate(LAYERS) for package in layer}


def package_of(path: Path) -> str:
    """The package (or top-level module) of ``service/`` that ``path`` belongs to."""
    return path.relative_to(SERVICE).parts[0].removesuffix(".py")


def imported_packages(path: Path) -> set[str]:
    """The packages of ``service/`` that ``path`` imports, anywhere in it (functions
    included)."""
    module = path.relative_to(ROOT).with_suffix("").parts
    if module[-1] == "__init__":
        module = module[:-1]
        package_parts = module
    else:
        package_parts = module[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package_parts[:len(package_parts) - node.level + 1]
            names = [".".join((*base, node.module))] if node.module else \
                [".".join((*base, alias.name)) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "service" and len(parts) > 1:
                found.add(parts[1])
    return found


MODULES = sorted(SERVICE.rglob("*.py"))


def test_every_package_has_a_layer():
    packages = {package_of(path) for path in MODULES} - {"__init__"}
    assert packages <= set(RANK), sorted(packages - set(RANK))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SERVICE)))
def test_a_module_imports_only_the_layers_below_its_own(path):
    own = package_of(path)
    if own == "__init__":
        return
    wrong = sorted(other for other in imported_packages(path) - {own}
                   if RANK[other] <= RANK[own])
    assert wrong == [], f"{path.relative_to(ROOT)} imports {wrong}: not below {own!r}"


def test_the_packages_form_no_cycle():
    graph = {package_of(path): set() for path in MODULES}
    for path in MODULES:
        graph[package_of(path)] |= imported_packages(path) - {package_of(path)}
    seen, done = set(), set()

    def visit(package, trail):
        assert package not in trail, " -> ".join((*trail, package))
        if package in done:
            return
        for other in sorted(graph.get(package, ())):
            visit(other, (*trail, package))
        done.add(package)

    for package in sorted(graph):
        visit(package, ())
    assert done >= seen


def diagram() -> str:
    """The layers as ``docs/architecture.md`` draws them: top first, the packages of one
    layer side by side."""
    return " -> ".join(" | ".join(layer) for layer in LAYERS)


def test_the_architecture_page_draws_these_layers():
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert diagram() in text, "docs/architecture.md's layer diagram differs from LAYERS:\n" \
        + diagram()
