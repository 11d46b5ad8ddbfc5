"""`python -m bench players` works end to end: a tiny run (a few dozen games, about a
second per endpoint) against its own Redis and gunicorn.  No figure is ever checked
against its goal: only that every endpoint was loaded with the expected status, that
the exports sent every game, and that the table is printed and the section written
with the rest of the report kept."""

from __future__ import annotations

import re

import pytest

from bench import http as bench_http
from bench import players as bench_players
from bench.__main__ import BENCHMARKS


@pytest.fixture(scope="module")
def wrk():
    try:
        return bench_http.find_wrk()
    except bench_http.Unavailable as error:
        pytest.skip(f"!!! wrk IS NOT AVAILABLE, THE PLAYERS BENCHMARK IS NOT EXERCISED: {error}")


def test_the_players_benchmark_is_listed():
    assert BENCHMARKS["players"] == "bench.players"


def _rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) >= 4:
            rows[cells[0]] = cells
    return rows


@pytest.mark.timeout(240)
def test_a_tiny_run_prints_the_table_and_writes_its_section(wrk, tmp_path, capsys):
    report = tmp_path / "RESULTS.md"
    # The other sections stay; this benchmark's own is replaced.
    report.write_text("# Benchmark results\n\nhead\n\n<!-- bench players: begin -->\nstale\n"
                      "<!-- bench players: end -->\n\n<!-- runs by hand: begin -->\n"
                      "by hand\n<!-- runs by hand: end -->\n")
    games = 60
    assert bench_players.main([
        "--games", str(games), "--rounds", "2", "--duration", "1", "--warmup", "0",
        "--connections", "4", "--exports", "1", "--output", str(report),
    ]) == 0
    printed = capsys.readouterr().out
    text = report.read_text()
    assert text.startswith("# Benchmark results\n\nhead\n\n<!-- bench players: begin -->\n")
    assert "stale" not in text
    assert text.endswith("<!-- bench players: end -->\n\n<!-- runs by hand: begin -->\n"
                         "by hand\n<!-- runs by hand: end -->\n")
    assert f"{games} games created through the API" in text

    # The table: every figure, measured, with its goal and a verdict (whichever it is).
    table = _rows(printed)
    for figure in ("`GET /v1/players/me/games?limit=50` / `GET /v1/games/<id>`, "
                   "requests/s, 4 connections",
                   "`GET /v1/players/me/games?limit=50` / `GET /v1/games/<id>`, p99",
                   "`GET /v1/players/me/stats` / `GET /v1/games/<id>`, requests/s",
                   "NDJSON export, games/s (median of 2; lowest–highest)",
                   "NDJSON export, growth of the serving process's RSS (largest of 2)"):
        assert figure in table, figure
        measured, _goal, met = table[figure][1:4]
        assert re.match(r"-?[\d,.]+", measured), measured
        assert met in ("pass", "FAIL")
    assert sum(1 for row in table.values() if row[3] in ("pass", "FAIL")) == 7
    assert "wrote the section of" in printed

    # Every endpoint answered, each request with its expected status.
    rows = _rows(text)
    for label in ("`GET /v1/games/<id>` (reference)", "`GET /v1/players/me/games?limit=50`",
                  "the same, `variant=`, `status=` or both (50 a page)",
                  "`GET /v1/players/me/stats`"):
        cells = rows[label]
        assert float(cells[1].replace(",", "")) > 0, cells
        assert cells[5] == "0", cells  # errors (another status would be listed)
    # Each export sent every game.
    exports = [cells for key, cells in rows.items() if key in ("1", "2")]
    assert len(exports) == 2
    assert all(cells[1] == str(games) for cells in exports), exports
