"""`python -m bench daily` works end to end: a tiny run (a board of a few thousand
entries, a few dozen players, a few hundred games closed, about a second per kind)
against its own Redis, its own Redis Cluster and gunicorn.  No figure is checked against
its goal: only that every kind was loaded with the expected status, that the close put
every open game on the board as abandoned, and that the table is printed and the
section written with the rest of the report kept."""

from __future__ import annotations

import re

import pytest

from bench import daily as bench_daily
from bench import http as bench_http
from bench.__main__ import BENCHMARKS


@pytest.fixture(scope="module")
def wrk():
    try:
        return bench_http.find_wrk()
    except bench_http.Unavailable as error:
        pytest.skip(f"!!! wrk IS NOT AVAILABLE, THE DAILY BENCHMARK IS NOT EXERCISED: {error}")


def test_the_daily_benchmark_is_listed():
    assert BENCHMARKS["daily"] == "bench.daily"


def _rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) >= 4:
            rows.setdefault(cells[0], cells)
    return rows


@pytest.mark.timeout(300)
def test_a_tiny_run_prints_the_table_and_writes_its_section(wrk, tmp_path, capsys):
    report = tmp_path / "RESULTS.md"
    report.write_text("# Benchmark results\n\nhead\n\n<!-- bench daily: begin -->\nstale\n"
                      "<!-- bench daily: end -->\n\n<!-- runs by hand: begin -->\n"
                      "by hand\n<!-- runs by hand: end -->\n")
    closed = 300
    assert bench_daily.main([
        "--entries", "3000", "--sample", "20", "--reference-games", "30", "--players", "40",
        "--close-games", str(closed), "--close-before", "1", "--rounds", "2",
        "--duration", "1", "--warmup", "0", "--connections", "4", "--output", str(report),
    ]) == 0
    printed = capsys.readouterr().out
    text = report.read_text()
    assert text.startswith("# Benchmark results\n\nhead\n\n<!-- bench daily: begin -->\n")
    assert "stale" not in text
    assert text.endswith("<!-- bench daily: end -->\n\n<!-- runs by hand: begin -->\n"
                         "by hand\n<!-- runs by hand: end -->\n")
    assert "3,000 entries on today's Clock board" in text

    table = _rows(printed)
    figures = [f"{where}: {what}" for where in ("one Redis", "the Redis Cluster")
               for what in ("top 100, p99 ms (4 connections)",
                            "top 100 / `GET` game, requests/s",
                            "a player's rank ±25, p99 ms (4 connections)",
                            "a player's rank ±25 / `GET` game, requests/s")]
    figures += [f"the close: {closed} open ranked games on the board as abandoned, seconds",
                "during the close: `GET` game requests/s / before it"]
    for figure in figures:
        assert figure in table, figure
        measured, _goal, met = table[figure][1:4]
        assert re.match(r"-?[\d,.]+", measured), measured
        assert met in ("pass", "FAIL")
    # The last move's ratio: the rounds in which games ran out are left out (and said).
    last = [cells for name, cells in table.items()
            if name.startswith("a ranked game's last move / an ordinary game's, requests/s")]
    assert len(last) == 1
    assert re.match(r"-?[\d,.]+|no round", last[0][1]), last
    assert last[0][3] in ("pass", "FAIL")
    assert sum(1 for row in table.values() if row[3] in ("pass", "FAIL")) == 11
    # The close put every open game on the board, as abandoned, and nothing else.
    assert f"the boards hold {closed} entries (abandoned {closed}); 0 outboxes" in text
    assert table[figures[-2]][3] == "pass" or float(table[figures[-2]][1]) > 60

    # Every read answered with its expected status, on both backends.
    reads = [line for line in text.splitlines()
             if line.startswith(("| `GET /v1/games/<id>` (reference)", "| `GET .../board"))]
    assert len(reads) == 6
    for line in reads:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert float(cells[1].replace(",", "")) > 0, cells
        assert cells[5] == "0", cells
    # The resigns were answered 200 (a lane out of games reads /healthz: counted apart).
    for label in ("resign of an ordinary game of a player",
                  "resign of a ranked game (its end onto the board)"):
        cells = _rows(text)[label]
        assert float(cells[1].replace(",", "")) > 0, cells
        assert "statuses" not in cells[5], cells


def test_the_batches_run_closes_every_game_once_each_way(tmp_path, capsys):
    """``python -m bench daily batches``, tiny (twenty games closed each way) on its own
    Redis: every game closed once each way (it raises otherwise), the table printed and
    its own section written with the rest of the report kept."""
    from bench.daily import batches

    report = tmp_path / "RESULTS.md"
    report.write_text("# Benchmark results\n\nkept\n")
    assert bench_daily.main(["batches", "--games", "20", "--output", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "| one at a time (`Games.abandon`) | 20 |" in printed
    assert "| in batches (`Daily.close_due`) | 20 |" in printed
    text = report.read_text()
    assert "kept" in text
    assert text.count(batches.BEGIN) == 1
    assert text.count(batches.END) == 1
    assert "times as fast as one at a time" in text


@pytest.mark.timeout(120)
def test_the_board_s_reads_alone_write_their_own_section(wrk, tmp_path, capsys):
    """``--only board``: the board's reads against `GET` game, on one Redis, and
    nothing else; the whole run's section is kept."""
    from bench.daily.report import BEGIN, BOARD_BEGIN, BOARD_END, END

    report = tmp_path / "RESULTS.md"
    report.write_text(f"# Benchmark results\n\n{BEGIN}\nthe whole run\n{END}\n")
    assert bench_daily.main([
        "--only", "board", "--no-cluster", "--entries", "2000", "--sample", "10",
        "--reference-games", "20", "--rounds", "1", "--duration", "1", "--warmup", "0",
        "--connections", "4", "--output", str(report)]) == 0
    table = _rows(capsys.readouterr().out)
    assert sum(1 for row in table.values() if row[3] in ("pass", "FAIL")) == 4
    assert "one Redis: top 100 / `GET` game, requests/s" in table
    text = report.read_text()
    assert f"{BEGIN}\nthe whole run\n{END}" in text
    assert text.count(BOARD_BEGIN) == text.count(BOARD_END) == 1
    board = text.split(BOARD_BEGIN)[1]
    assert "the board's reads alone" in board
    assert "resign" not in board
    assert "The close" not in board
    reads = [line for line in board.splitlines()
             if line.startswith(("| `GET /v1/games/<id>` (reference)", "| `GET .../board"))]
    assert len(reads) == 3
    for line in reads:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert float(cells[1].replace(",", "")) > 0, cells
        assert cells[5] == "0", cells


def test_the_last_move_alone_writes_its_own_section(wrk, tmp_path, capsys):
    """``--last-move-only``, tiny: the two resigns measured (answered 200) and their
    goal printed, into a section of its own; the full run's section is kept."""
    from bench.daily.report import LAST_MOVE_BEGIN, LAST_MOVE_END

    report = tmp_path / "RESULTS.md"
    report.write_text("# Benchmark results\n\n<!-- bench daily: begin -->\nthe full run\n"
                      "<!-- bench daily: end -->\n")
    assert bench_daily.main([
        "--last-move-only", "--entries", "2000", "--sample", "10", "--players", "30",
        "--rounds", "1", "--duration", "1", "--warmup", "0", "--connections", "4",
        "--output", str(report)]) == 0
    printed = capsys.readouterr().out
    text = report.read_text()
    assert "the full run" in text
    assert text.count(LAST_MOVE_BEGIN) == 1
    assert text.count(LAST_MOVE_END) == 1
    assert "`GET .../board" not in text
    assert "The close" not in text
    table = _rows(printed)
    figures = [name for name in table if name != "figure"]  # the goals' header: "figure"
    assert len(figures) == 1, figures
    assert figures[0].startswith("a ranked game's last move / an ordinary game's")
    assert table[figures[0]][3] in ("pass", "FAIL")
    for label in ("resign of an ordinary game of a player",
                  "resign of a ranked game (its end onto the board)"):
        cells = _rows(text)[label]
        assert float(cells[1].replace(",", "")) > 0, cells
        assert "statuses" not in cells[5], cells
