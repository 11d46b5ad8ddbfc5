"""The marked sections of ``bench/RESULTS.md``: each benchmark owns the text between its
two markers and rewrites only that, so the others' results stay; and the cells of their
goal tables."""

from __future__ import annotations

import statistics
from pathlib import Path


def write_section(path: Path, begin: str, end: str, text: str) -> None:
    """Put ``text`` between ``begin`` and ``end`` in ``path`` (appended, markers and all,
    when the file has no such section yet)."""
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    section = f"{begin}\n{text}\n{end}"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + section + rest.split(end, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(new)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def rounds_cell(values: list[float]) -> str:
    """The rounds' median, with the lowest and highest round in brackets."""
    text = f"{median(values):.2f}"
    if len(values) > 1:
        text += f" ({min(values):.2f}–{max(values):.2f})"
    return text


def verdict(ok: bool) -> str:
    return "pass" if ok else "FAIL"
