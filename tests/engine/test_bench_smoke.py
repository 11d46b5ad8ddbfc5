"""`python -m bench engine` keeps working (a tiny run; times are never checked)."""

from bench.__main__ import main as bench_main
from bench.engine import main as engine_main


def test_engine_benchmark_prints_a_row_per_variant(capsys):
    assert engine_main(["--playouts", "3"]) == 0
    out = capsys.readouterr().out
    for variant_id in ("clock", "salic-law", "four-corners"):
        assert f"\n{variant_id} " in out
    assert "median µs" in out
    assert "snapshot B max" in out


def test_dispatcher_runs_one_benchmark_by_name_and_refuses_unknown_ones(capsys):
    assert bench_main(["engine", "--playouts", "2", "--variant", "clock"]) == 0
    assert "\nclock " in capsys.readouterr().out
    assert bench_main(["no-such-bench"]) == 2
    assert "unknown benchmark" in capsys.readouterr().err
