"""`python -m bench daily` works end to end: a tiny run (twenty games closed each way)
on its own Redis.  No figure is checked against a goal: only that every game was closed
once each way (the benchmark raises otherwise), that the table is printed, and that its
section is written with the rest of the report kept."""

from __future__ import annotations

from bench import daily as bench_daily
from bench.__main__ import BENCHMARKS


def test_the_daily_benchmark_is_listed():
    assert BENCHMARKS["daily"] == "bench.daily"


def test_a_tiny_run_prints_the_table_and_writes_its_section(tmp_path, capsys):
    report = tmp_path / "RESULTS.md"
    report.write_text("# Benchmark results\n\nkept\n")
    assert bench_daily.main(["--games", "20", "--output", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "| one at a time (`Games.abandon`) | 20 |" in printed
    assert "| in batches (`Daily.close_due`) | 20 |" in printed
    text = report.read_text()
    assert "kept" in text
    assert text.count(bench_daily.BEGIN) == 1
    assert text.count(bench_daily.END) == 1
    assert "times as fast as one at a time" in text
