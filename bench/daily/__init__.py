"""The daily deal's benchmark (docs/daily.md): its board's reads, a ranked game's end,
and the close of a day, each against ``GET /v1/games/<id>`` of the same run.

Its own redis-server (AOF, ``appendfsync always``) and gunicorn (the request group's
settings as they are, rate limiting off, ``DAILY_ACCOUNT_RULE=any``) on free ports, as
``python -m bench http`` starts them, then the same on a local Redis Cluster (3 masters,
a replica each, ``appendfsync always``).  In rounds (the kinds in turn under wrk, 32
connections, bench/http/wrk.lua):

1. a day's board of ``--entries`` (1,000,000) entries: ``GET .../board?limit=100`` and
   ``GET .../board/players/<id>?around=25``: p99 at most 25 ms and requests/s at least
   0.8 of ``GET`` game's, on one Redis and on the cluster;
2. a ranked game's last move (a resign: its end written onto the board) against an
   ordinary game's of the same players: requests/s at least 0.9 (one Redis);
3. the close of a day with ``--close-games`` (100,000) ranked games in play: the time
   until every one is on the board as abandoned (at most a minute), and ``GET`` game's
   requests/s and p99 meanwhile against just before (one Redis).

The figures, their goals and whether each is met are printed and written into the
daily section of ``bench/RESULTS.md``.  Nothing fails on a figure.

    python -m bench daily [--entries N] [--sample N] [--reference-games N]
                          [--players N] [--close-games N] [--close-before S]
                          [--no-cluster] [--only board] [--last-move-only]
                          [--duration S] [--rounds N] [--warmup S] [--connections N]
                          [--threads N] [--output PATH]
    python -m bench daily batches [--games N] [--cluster] [--output PATH]

``--only board`` measures the board's reads alone (round 1: no players, no last moves,
no close).

``--last-move-only`` measures 2 alone (its own section of ``bench/RESULTS.md``).

``batches`` (:mod:`bench.daily.batches`) is another measurement: the close in batches
against the same games abandoned one at a time through the write pipeline, in one run
(its own section of ``bench/RESULTS.md``).

Modules: ``fill`` (the board, the players and games, the open games), ``load`` (the
rounds and the close), ``cluster`` (the service on a Redis Cluster), ``report``,
``cli``, ``batches``.
"""

from bench.daily.cli import main, unavailable

__all__ = ["main", "unavailable"]
