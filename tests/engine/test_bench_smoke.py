"""`python -m bench engine` keeps working (a tiny run; times are never checked)."""

import json
import os
import re
import time

import pytest

from bench.__main__ import main as bench_main
from bench.engine import main as engine_main
from bench.procs import WorkerWatch
from devtools.launch import start_worker, stop_gunicorn
from devtools.redis_server import free_port
from service.engine import variants


def test_engine_benchmark_prints_a_row_per_variant(capsys):
    assert engine_main(["--playouts", "3"]) == 0
    out = capsys.readouterr().out
    for variant in variants():
        assert f"\n{variant.id} " in out
    assert "median µs" in out
    assert "snapshot B max" in out


def test_dispatcher_runs_one_benchmark_by_name_and_refuses_unknown_ones(capsys):
    assert bench_main(["engine", "--playouts", "2", "--variant", "clock"]) == 0
    out = capsys.readouterr().out
    assert "\nclock " in out
    # Whether the solver's worker ran meanwhile, whatever else runs on the machine.
    assert re.search(r"^== engine: The solver's worker (did not run|ran) during the whole "
                     r"benchmark", out, re.M)
    assert bench_main(["no-such-bench"]) == 2
    assert "unknown benchmark" in capsys.readouterr().err


def test_solver_benchmark_writes_its_table_between_its_markers(tmp_path, capsys):
    output, records = tmp_path / "RESULTS.md", tmp_path / "records.jsonl"
    output.write_text("# Benchmark results\n\nother sections stay\n")
    argv = ["solver", "--seeds", "1", "--first", "2", "--budget", "2", "--processes", "1",
            "--variant", "salic-law", "--output", str(output), "--records", str(records),
            "--bots", "none"]
    assert bench_main(argv) == 0
    # Deal 2 of Salic Law is won (the solution tests replay its line).
    out = capsys.readouterr().out
    assert "\n| salic-law | 1 | 1 | 0 | 0 | 100.0% (99%: met) |" in out
    assert re.search(r"The solver's worker (did not run|ran) during this run", out)
    assert bench_main([*argv[:-1], "quick"]) == 0
    out = capsys.readouterr()
    assert "0 of 1 deals recorded already" in out.err   # the verdict, without the bots
    assert "| salic-law | random legal moves | 0 (0.0%) | 0 of 1: 0.0%" in out.out
    assert "| salic-law | quick hint (rules of thumb) |" in out.out
    assert bench_main([*argv[:-1], "quick"]) == 0
    assert "1 of 1 deals recorded already" in capsys.readouterr().err
    assert len(records.read_text().splitlines()) == 2
    # The table of what is recorded, nothing played: deal 3 never was.
    assert bench_main([*argv[:-1], "quick", "--seeds", "2", "--table-only"]) == 0
    out = capsys.readouterr()
    assert "1 of 2 deals recorded already" in out.err
    assert "0 to play" in out.err
    assert "salic-law 2..3 (only 1 of these deals recorded: the run was cut short)" in out.out
    assert len(records.read_text().splitlines()) == 2
    # Records of another engine count only when asked, and the table says whose they are.
    lines = records.read_text().splitlines()
    records.write_text("".join(line.replace('"engine": "', '"engine": "old') + "\n"
                               for line in lines))
    assert bench_main([*argv[:-1], "quick", "--table-only"]) == 0
    assert "0 of 1 deals recorded already" in capsys.readouterr().err
    assert bench_main([*argv[:-1], "quick", "--table-only", "--any-engine"]) == 0
    out = capsys.readouterr().out
    assert "1 of these deals recorded" not in out
    assert ("Records: salic-law: solver verdicts and random bot's games and quick bot's "
            "games: 1 deals by engine old") in out
    assert "(not this checkout's)" in out
    text = output.read_text()
    assert text.startswith("# Benchmark results\n\nother sections stay\n")
    assert text.count("<!-- solver table: begin -->") == 1
    assert text.count("| salic-law | 1 |") == 1
    assert "| salic-law | quick hint (rules of thumb) |" in text


def test_a_bots_only_run_keeps_the_verdicts_and_the_table_names_each_parts_engine(
        tmp_path, capsys):
    output, records = tmp_path / "RESULTS.md", tmp_path / "records.jsonl"
    argv = ["solver", "--seeds", "1", "--first", "2", "--budget", "2", "--processes", "1",
            "--variant", "salic-law", "--output", str(output), "--records", str(records)]
    assert bench_main([*argv, "--bots", "none"]) == 0
    capsys.readouterr()
    # The verdict of another engine; the bots played by this one, the solver not run.
    verdict = records.read_text().replace('"engine": "', '"engine": "old')
    records.write_text(verdict)
    assert bench_main([*argv, "--bots", "quick", "--no-solver"]) == 0
    assert "1 to play" in capsys.readouterr().err
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert "result" in lines[0]
    assert lines[0]["bots"] == {}
    assert "result" not in lines[1]
    assert set(lines[1]["bots"]) == {"random", "quick"}
    # Nothing left to play; without --any-engine the old verdict does not count.
    assert bench_main([*argv, "--bots", "quick", "--no-solver"]) == 0
    out = capsys.readouterr()
    assert "0 to play" in out.err
    assert "(only 0 of these deals recorded" in out.out
    assert bench_main([*argv, "--bots", "quick", "--table-only", "--any-engine"]) == 0
    out = capsys.readouterr().out
    assert "\n| salic-law | 1 | 1 | 0 | 0 | 100.0% (99%: met) |" in out
    assert "Records: salic-law: solver verdicts: 1 deals by engine old" in out
    assert "; random bot's games and quick bot's games: 1 deals by engine " in out
    assert "| salic-law | quick hint (rules of thumb) |" in out


def test_hint_latency_benchmark_times_hints_through_gunicorn(tmp_path, capsys):
    output = tmp_path / "RESULTS.md"
    assert bench_main(["hints", "--hints", "3", "--variant", "four-corners",
                       "--output", str(output)]) == 0
    assert "| four-corners | 3 |" in capsys.readouterr().out
    text = output.read_text()
    assert text.count("<!-- bench hints: begin -->") == 1
    assert "| hint p90 ≤ 300 ms |" in text


def test_a_rewritten_results_file_keeps_the_solver_table():
    # What bench http writes after its own report when it rewrites the file.
    from bench.http.report import other_sections
    from bench.solver import BEGIN, END

    old = f"# Benchmark results\n\nold http tables\n\n{BEGIN}\n| solver |\n{END}\n"
    new = "# Benchmark results\n\nnew http tables\n"
    assert new + other_sections(old) == f"{new}\n{BEGIN}\n| solver |\n{END}\n"
    assert other_sections("no table") == ""


def test_a_game_module_changes_only_its_own_variants_records(tmp_path, monkeypatch):
    from bench import solver
    from service.engine import get_variant

    variant_ids = tuple(variant.id for variant in variants())
    own = {v: solver.own_modules(get_variant(v)) for v in variant_ids}
    assert own["clock"] == {"rules/clock.py", "search/clock.py"}
    assert own["salic-law"] == {"rules/salic_law.py", "search/salic_law.py"}
    assert own["four-corners"] == {"rules/four_corners.py", "search/four_corners.py",
                                   "search/endgame.py"}
    engine = tmp_path / "service" / "engine"
    for name in ("base.py", "search/solver.py", *set().union(*own.values())):
        (engine / name).parent.mkdir(parents=True, exist_ok=True)
        (engine / name).write_text(f"# {name}\n")
    monkeypatch.setattr(solver, "ROOT", tmp_path)
    before = {v: solver.engine_digest(v) for v in variant_ids}
    # A game's rules or searches change that game's digest only.
    for variant_id, names in own.items():
        for name in sorted(names):
            (engine / name).write_text(f"# {name}, changed\n")
            after = {v: solver.engine_digest(v) for v in variant_ids}
            assert {v for v in variant_ids if after[v] != before[v]} == {variant_id}, name
            before = after
    # A shared module changes them all, in a package as at the top.
    for name in ("base.py", "search/solver.py"):
        (engine / name).write_text(f"# {name}, changed\n")
        after = {v: solver.engine_digest(v) for v in variant_ids}
        assert all(after[v] != before[v] for v in variant_ids), name
        before = after


def test_a_hint_with_a_budget_of_its_own_plays_beside_the_others(tmp_path, capsys):
    output, records = tmp_path / "RESULTS.md", tmp_path / "records.jsonl"
    argv = ["solver", "--seeds", "1", "--first", "2", "--budget", "2", "--processes", "1",
            "--variant", "salic-law", "--output", str(output), "--records", str(records)]
    assert bench_main([*argv, "--bots", "none", "--hint-budget", "2x50"]) == 0
    out = capsys.readouterr().out
    line = json.loads(records.read_text())
    assert set(line["bots"]) == {"hint@2x50"}
    assert "| salic-law | hint, 2 samples × 50 positions (no time limit) |" in out
    # The targets are the API hint's: this bot is not judged as the hint.
    assert "hint bot wins" not in out
    # Recorded under its own name: asking again plays nothing, another budget plays.
    assert bench_main([*argv, "--bots", "none", "--hint-budget", "2x50"]) == 0
    assert "0 to play" in capsys.readouterr().err
    assert bench_main([*argv, "--bots", "none", "--hint-budget", "1x50", "--no-solver"]) == 0
    assert "1 to play" in capsys.readouterr().err
    for wrong in ("8", "8x", "x40", "0x40", "eight"):
        with pytest.raises(SystemExit) as exit_:
            bench_main([*argv, "--hint-budget", wrong])
        assert exit_.value.code == 2
        assert "SAMPLESxPOSITIONS" in capsys.readouterr().err


def test_a_table_in_positions_has_a_section_of_its_own(tmp_path, capsys):
    output, records = tmp_path / "RESULTS.md", tmp_path / "records.jsonl"
    common = ["solver", "--seeds", "1", "--first", "2", "--processes", "1", "--variant",
              "salic-law", "--output", str(output), "--records", str(records), "--bots", "none"]
    assert bench_main([*common, "--budget", "2"]) == 0
    assert bench_main([*common, "--positions", "20000"]) == 0
    out = capsys.readouterr().out
    assert "at most 20,000 positions (no time limit) per deal" in out
    text = output.read_text()
    assert text.count("<!-- solver table: begin -->") == 1
    assert text.count("<!-- solver table, 20,000 positions (no time limit): begin -->") == 1
    assert text.count("| salic-law | 1 | 1 | 0 | 0 |") == 2
    # Each budget's verdict is recorded apart: no run reuses the other's.
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert [(line["budget"], line.get("positions")) for line in lines] == [(2, None),
                                                                            (None, 20000)]


@pytest.mark.timeout(120)
def test_idle_benchmark_reads_the_cpu_of_every_part_of_make_run(tmp_path, monkeypatch):
    # The worker searching without rest and at the API's priority, so that it works
    # during the few seconds measured however busy the machine is.
    monkeypatch.setenv("WORKER_CPU_SHARE", "1")
    monkeypatch.setenv("WORKER_NICE", "0")
    output = tmp_path / "RESULTS.md"
    assert bench_main(["idle", "--minutes", "0.05", "--runs", "1", "--settle", "0",
                       "--data", str(tmp_path / "data"), "--output", str(output)]) == 0
    row = next(line for line in output.read_text().splitlines() if line.startswith("| 1 |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    parts = dict(zip(("devserver", "redis-server", "worker", "request group", "events group",
                      "total"), map(float, cells[5:11]), strict=True))
    assert parts["worker"] > 0
    # The parts add up to the total.
    assert abs(sum(parts.values()) - 2 * parts["total"]) < 0.05
    assert [pool.split()[0] for pool in cells[2].split(", ")] == ["clock", "salic-law",
                                                                   "four-corners"]


def test_the_worker_watch_sees_a_worker_started_and_stopped_within_it():
    """A benchmark's own worker, started after the watch and stopped before its end (as
    `python -m bench idle` and `winnable` run theirs), is seen with its CPU."""
    env = dict(os.environ, REDIS_URL=f"redis://127.0.0.1:{free_port()}", LOG_LEVEL="WARNING")
    with WorkerWatch(every=0.2) as watch:
        worker = start_worker(env)  # it waits for a Redis that never answers
        time.sleep(2.0)
        stop_gunicorn(worker, 10)
    seen = [cpu for (pid, _started), cpu in watch.after.items() if pid == worker.pid]
    assert len(seen) == 1, watch.after
    assert seen[0] > 0
    assert worker.pid not in {pid for pid, _started in watch.before}
    assert watch.ran
    assert watch.cpu >= seen[0]
    assert "The solver's worker ran during the measurements" in watch.summary()
