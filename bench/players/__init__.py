"""Players' benchmark: what a player reads of their own, against a game's ``GET``.

Its own redis-server (AOF, ``appendfsync always``, as in docker-compose.yml) and
gunicorn (the request group's settings as they are, rate limiting off) on free ports,
as ``python -m bench http`` starts them.  One player is made through the API: an account,
``--games`` games created with its token (the variants in turn, on parallel
connections) and a share of them resigned, so that its list and its statistics are what
the service itself wrote.  Then, in rounds (each endpoint in turn under wrk, 32
connections, then the exports), against ``GET /v1/games/<id>`` of the same round:

1. ``GET /v1/players/me/games?limit=50``, and the same under each ``variant=`` /
   ``status=`` filter in turn: requests/s (goal at least 0.8 of the game's) and p99
   (goal at most twice the game's);
2. the NDJSON export of every game (``Accept: application/x-ndjson``): games/s (goal at
   least 2,000) and the growth of the serving process's resident memory while it is
   served (goal below 50 MB);
3. ``GET /v1/players/me/stats``: requests/s (goal at least 0.8 of the game's).

The figures, their goals and whether each is met are printed, and written into the
players' section of ``bench/RESULTS.md`` (replaced on every run, the rest kept).
Nothing fails on a figure.

    python -m bench players [--games N] [--resigned SHARE] [--duration S] [--rounds N]
                            [--warmup S] [--connections N] [--threads N] [--exports N]
                            [--output PATH]

One module a job: ``fill`` (the player and its games, through the API), ``load`` (wrk
with bench/http/wrk.lua's requests, the rounds), ``export`` (the export and the processes'
memory), ``report`` (the goals and the section), ``cli`` (the command).  The service,
wrk and the rounds' figures are :mod:`bench.http`'s.
"""

from bench.players.cli import main, unavailable

__all__ = ["main", "unavailable"]
