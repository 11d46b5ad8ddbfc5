"""`python -m bench follow` works end to end: a tiny run of every phase on one instance of
`make run` (a few followers, a second per phase).  No time or rate is ever checked: only
that the followers opened and read their streams in order, that every phase ran and
measured each part of the instance, and that the report holds its tables."""

from __future__ import annotations

import re

import pytest

from bench.__main__ import BENCHMARKS
from bench.__main__ import main as bench_main


def test_the_follow_benchmark_is_part_of_make_bench():
    assert BENCHMARKS["follow"] == "bench.follow"


@pytest.mark.timeout(180)
def test_a_tiny_run_writes_its_section(tmp_path, capsys):
    report = tmp_path / "RESULTS.md"
    report.write_text("# Benchmark results\n\n<!-- bench other: begin -->\nkept\n"
                      "<!-- bench other: end -->\n")
    assert bench_main(["follow", "--followers", "24", "--games", "3", "--rate", "10",
                       "--seconds", "1", "--throughput-seconds", "1", "--processes", "2",
                       "--open-rate", "200", "--connections", "2",
                       "--output", str(report)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^instance up on port \d+: events group \[\d+, \d+\], request group "
                     r"\[\d+(, \d+){4}\]$", out, re.M)
    text = report.read_text()
    assert "<!-- bench other: begin -->\nkept\n<!-- bench other: end -->" in text
    assert text.count("<!-- bench follow: begin -->") == 1
    assert "one instance of `make run` (`python -m devtools.devserver`" in text
    assert "The instance's solver's worker runs idle (`WINNABLE_POOL=clock=0`" in text
    assert "| concurrent followers over 3 games | 24 (0 refused, 0 errors) |" in text
    assert re.search(r"\| every follower got every event, in order \| \d+ moves in [\d.]+ s: "
                     r"\d+ not received by all, 0 gaps or reorders \|", text)
    lines = text.splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith("| phase |"))
    assert lines[start].endswith("| request group | events group | redis | solver worker | "
                                 "players | other processes |")
    rows = lines[start + 2:start + 6]
    assert [row.split(" | ")[0] for row in rows] == [
        "| moves alone, before", "| moves with idle followers",
        "| moves with followers following 50 moves/s", "| moves alone, after"]
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert float(cells[1].replace(",", "")) > 0, row  # moves were answered
        assert float(cells[4]) > 0, row  # the request group's CPU was read
