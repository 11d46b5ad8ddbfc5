"""What the HTTP benchmark aims at and how big it is: targets, sizes, names, paths."""

from __future__ import annotations

from pathlib import Path

from bench.walks import VARIANT_IDS

ROOT = Path(__file__).resolve().parent.parent.parent
#: The report (``--output``): written whole on every run.
RESULTS = ROOT / "bench" / "RESULTS.md"
HOST = "127.0.0.1"
#: The variants whose games are created and played: every one the engine registers.
VARIANTS = VARIANT_IDS
#: The service's targets (docs/performance.md): the rate of an endpoint over the rate
#: of ``/healthz`` in the same round, per Redis persistence; the p99 of a move; the Redis
#: memory of a game after ``MEMORY_MOVES`` moves.
TARGETS = {
    ("always", "post_moves"): 0.30,
    ("always", "get_game"): 0.70,
    ("off", "post_moves"): 0.42,
}
TARGET_MOVE_P99_MS = 30.0
#: Against the reference endpoints (bench/toy.py, the stack alone), persistence always:
#: each service endpoint's rate over the rate of the reference that does the same Redis
#: work, in the same round (the median of the rounds); the p99 of a move over the p99 of
#: the reference write; the CPU of a move, gunicorn and Redis together.
VERSUS_TOY = {"healthz": "toy_json", "get_game": "toy_read", "post_moves": "toy_write"}
TARGET_VERSUS_TOY = 0.85
TARGET_MOVE_P99_VERSUS_TOY = 1.5
TARGET_MOVE_CPU_US = 700.0
TARGET_BYTES_PER_GAME = 4096
MEMORY_MOVES = 100
#: The reference endpoints (bench/toy.py), served like the service.
TOY_APP = "bench.toy:create_app()"
#: A generous ceiling of moves per second, to make the walks long enough.
MAX_MOVE_RATE = 3000
PERSISTENCE = {
    "always": "Redis AOF, appendfsync always (docker-compose.yml)",
    "off": "Redis persistence off (no AOF, no RDB)",
}
