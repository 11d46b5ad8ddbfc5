"""`python -m bench http` works end to end: a tiny run, about a second per endpoint, against
its own Redis and gunicorn.  No time is ever checked: only that every endpoint was
loaded, that every answer had the expected status (every move a legal one), and that the
report holds its tables."""

from __future__ import annotations

import os
import re
from unittest import mock

import pytest

from bench import http as bench_http
from bench.__main__ import BENCHMARKS
from bench.http.service import RATE_LIMIT, Service
from service.config import read_config


@pytest.fixture(scope="module")
def wrk():
    try:
        return bench_http.find_wrk()
    except bench_http.Unavailable as error:
        pytest.skip(f"!!! wrk IS NOT AVAILABLE, THE HTTP BENCHMARK IS NOT EXERCISED: {error}")


def test_the_http_benchmark_is_part_of_make_bench():
    assert BENCHMARKS["http"] == "bench.http"
    assert list(BENCHMARKS)[:2] == ["engine", "http"]


@pytest.mark.timeout(240)
def test_a_tiny_run_loads_every_endpoint_and_writes_the_report(wrk, tmp_path, capsys):
    report = tmp_path / "RESULTS.md"
    # What another benchmark keeps in the same file, between its markers, stays.
    report.write_text("# Benchmark results\n\nold text\n\n<!-- bench other: begin -->\n"
                      "kept\n<!-- bench other: end -->\n")
    assert bench_http.main([
        "--duration", "1", "--rounds", "2", "--warmup", "0", "--persistence", "always",
        "--connections", "4",
        "--games-per-connection", "2", "--memory-games", "2", "--memory-played", "1",
        "--streams", "4", "--profile-requests", "40", "--output", str(report),
    ]) == 0
    text = report.read_text()
    assert "old text" not in text
    assert text.endswith("\n<!-- bench other: begin -->\nkept\n<!-- bench other: end -->\n")
    for heading in ("## Machine", "## Configuration", "## Throughput and latency",
                    "## Targets", "## Redis memory per game", "## Profile of the request path"):
        assert heading in text
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 6:
            rows.setdefault(cells[0], []).append(cells)
    for label in ("`GET /healthz` (floor)", "`GET /v1/games/<id>`", "`GET /v1/games/<id>/moves`",
                  "`POST /v1/games/<id>/moves`", "`POST /v1/games`",
                  # the stack's floor: bench/toy.py under the same gunicorn config
                  "`GET /toy/json` (bare Flask JSON)",
                  "`GET /toy/read/<n>` (1 KiB value from Redis)",
                  "`POST /toy/write/<n>` (read, then Lua compare-and-set)"):
        assert label in rows, label
        for cells in rows[label]:
            assert float(cells[1].replace(",", "")) > 0, cells  # some requests were answered
            # An answer with another status than expected would be listed ("statuses ...").
            assert "statuses" not in cells[5], cells
            assert "past the end of the walks" not in cells[5], cells
    # The memory table has a row per variant, just created and after 100 moves.
    for variant in ("clock", "salic-law", "four-corners"):
        assert re.search(rf"^\| {variant} \| 0 \|", text, re.M)
        assert re.search(rf"^\| {variant} \| 100 \|", text, re.M)
    assert "`POST .../moves` / `/toy/write`" in text
    # Two rounds: each ratio is the median of two, with their range; the floor's is 1.
    assert re.search(r"^\| `GET /healthz` \(floor\) \| [\d,]+ \| 1\.00 \(1\.00–1\.00\) \|",
                     text, re.M)
    assert re.search(r"^\| `POST /v1/games/<id>/moves` \| [\d,]+ \| \d\.\d\d "
                     r"\(\d\.\d\d–\d\.\d\d\) \|", text, re.M)
    assert "POST /v1/games/<id>/moves: 40 requests" in text
    assert "wrote" in capsys.readouterr().out
    assert re.search(r"starts no solver's worker .*The solver's worker (did not run|ran) "
                     r"during the measurements", text)


def test_the_rate_limit_mode_sets_a_limit_the_service_reads(tmp_path):
    # The limit goes through the variable the service reads: another one would leave
    # the default (1200 a minute) and the run would measure 429s.
    service = Service(tmp_path, "off", rate_limit=True)
    with mock.patch.dict(os.environ, service.env, clear=True):
        config = read_config()
    assert config["RATELIMIT_ENABLED"] is True
    assert config["RATELIMIT_APPLICATION"] == RATE_LIMIT
