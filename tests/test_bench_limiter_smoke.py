"""`python -m bench limiter` works end to end: a tiny run against its own Redis and
gunicorn services.  No time or CPU figure is checked: only that every run was answered
as expected (every move a legal one) and that the table holds every row."""

from __future__ import annotations

import pytest

from bench import limiter
from bench.__main__ import BENCHMARKS
from bench.http.wrk import Unavailable, find_wrk


def test_the_limiter_benchmark_is_part_of_make_bench():
    assert BENCHMARKS["limiter"] == "bench.limiter"


@pytest.mark.timeout(240)
def test_a_tiny_run_measures_both_endpoints_with_the_limiter_off_and_on(capsys):
    # Four games a connection: a fast second of moves must not walk past their end.
    try:
        find_wrk()
    except Unavailable as error:
        pytest.skip(f"!!! wrk IS NOT AVAILABLE, THE LIMITER BENCHMARK IS NOT EXERCISED: {error}")
    assert limiter.main(["--rounds", "2", "--duration", "1", "--warmup", "0",
                         "--connections", "4", "--games-per-connection", "4",
                         "--control"]) == 0
    out = capsys.readouterr().out
    for _key, label in limiter.ENDPOINTS:
        assert f"| {label} |" in out
        assert f"| {label} (control: the limiter off) |" in out
    assert "over a move's CPU" in out
