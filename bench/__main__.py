"""``python -m bench``: run every benchmark available; ``python -m bench NAME [OPTIONS]``
runs one (``python -m bench engine --help`` for its options).

After each benchmark it says whether the solver's worker (``python -m service.solver.worker``,
anywhere on the machine: the benchmark's own, ``make run``'s, a container's) ran while
it measured, and the CPU it used (:class:`bench.procs.WorkerWatch`); the benchmarks
that write ``bench/RESULTS.md`` record it with their figures."""

from __future__ import annotations

import importlib
import sys

from bench.procs import WorkerWatch

#: name -> module with ``main(argv: list[str]) -> int`` and, optionally,
#: ``unavailable() -> str | None`` (why it cannot run here, e.g. a server is missing).
BENCHMARKS: dict[str, str] = {
    "engine": "bench.engine",
    "http": "bench.http",
    "solver": "bench.solver",
    "follow": "bench.follow",
    "hints": "bench.hints",
    "winnable": "bench.winnable",
    "cluster": "bench.cluster",
    "idle": "bench.idle",
    "players": "bench.players",
    "limiter": "bench.limiter",
    "daily": "bench.daily",
}

USAGE = f"usage: python -m bench [{' | '.join(BENCHMARKS)}] [OPTIONS]"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        print(__doc__)
        return 0
    if argv:
        name, options = argv[0], argv[1:]
        if name not in BENCHMARKS:
            print(f"unknown benchmark {name!r}\n{USAGE}", file=sys.stderr)
            return 2
        return _run(name, importlib.import_module(BENCHMARKS[name]), options)
    status = 0
    for name, module_name in BENCHMARKS.items():
        module = importlib.import_module(module_name)
        reason = getattr(module, "unavailable", lambda: None)()
        if reason:
            print(f"== {name}: skipped ({reason})\n")
            continue
        print(f"== {name}")
        status = max(status, _run(name, module, []))
        print()
    return status


def _run(name: str, module, options: list[str]) -> int:
    with WorkerWatch() as watch:
        status = module.main(options)
    print(f"== {name}: {watch.summary('the whole benchmark')}")
    return status


if __name__ == "__main__":
    sys.exit(main())
