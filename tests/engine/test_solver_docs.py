"""docs/solver.md argues why each search's pruning rules are sound: every citation of it
in the engine names one of its sections, and every section of a game's rules is cited
from the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "solver.md"


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, every character but letters,
    digits, spaces, hyphens and underscores dropped, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _sections() -> dict[str, str]:
    """The anchors of the page's headings, with their level (``##``, ``###``)."""
    return {_anchor(text): level for level, text in
            re.findall(r"^(#{2,3}) (.+)$", DOC.read_text(), flags=re.MULTILINE)}


def _citations() -> dict[str, list[str]]:
    """The anchors cited from the engine's code, with where."""
    cited: dict[str, list[str]] = {}
    for path in sorted((ROOT / "service" / "engine").rglob("*.py")):
        for anchor in re.findall(r"docs/solver\.md#([\w-]+)", path.read_text()):
            cited.setdefault(anchor, []).append(str(path.relative_to(ROOT)))
    return cited


def test_the_anchor_of_a_heading_is_githubs():
    assert _anchor("Four Corners: a packet's last card") == "four-corners-a-packets-last-card"
    assert _anchor('What "sound" means here') == "what-sound-means-here"


def test_every_citation_names_a_section():
    sections = _sections()
    cited = _citations()
    assert len(cited) >= 20
    assert {anchor: where for anchor, where in cited.items() if anchor not in sections} == {}


def test_every_rule_of_a_search_is_cited_from_the_code():
    rules = [anchor for anchor, level in _sections().items() if level == "###"]
    assert len(rules) >= 20
    assert [anchor for anchor in rules if anchor not in _citations()] == []
