"""The marked sections of ``bench/RESULTS.md``: each benchmark owns the text between its
two markers and rewrites only that, so the others' results stay."""

from __future__ import annotations

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
