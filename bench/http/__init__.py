"""HTTP benchmark: a real gunicorn with the production config against a real Redis.

For each Redis persistence (``always``: AOF with ``appendfsync always``, as in
docker-compose.yml; ``off``: no AOF, no RDB) the benchmark starts its own redis-server
and gunicorn (the request group's settings, rate limiting off) on free ports, creates
games, and loads each endpoint with wrk (32 connections on one thread per core, the
requests made by ``wrk.lua``) in rounds (default 3): each round loads every endpoint in
turn for a fixed time after a warm-up, so that a slower or faster spell of a shared
machine falls on all of them, and each ratio compares rates of the same round:

- ``GET /healthz``, the floor: an endpoint's ratio is the median over the rounds of its
  rate over the floor's in the same round;
- ``GET /v1/games/<id>`` and ``GET /v1/games/<id>/moves`` over every game in turn;
- ``POST /v1/games/<id>/moves``: long walks of legal moves computed with the engine
  (bench/walks.py), four games per connection, at most one move of a game in flight,
  each move with its ``If-Match``: every request is a new legal move of a game, nothing
  can be cached;
- ``POST /v1/games``, the variants in turn;
- the reference endpoints (bench/toy.py: a bare Flask JSON answer, a 1 KiB value read
  from Redis, and the same written back with a Lua compare-and-set), served alongside by
  the same gunicorn config against a Redis of the same persistence: the floor of the
  stack on this machine, in the same rounds.

It also reports Redis ``MEMORY USAGE`` per stored game (all its keys) just created and
after 100 moves; short requests while many Server-Sent Event streams are open; and a
profile of the request path (bench/profile.py).  Everything goes to ``bench/RESULTS.md``
(``--output``).  Targets are compared and reported; nothing fails on a time.

    python -m bench http [--duration S] [--rounds N] [--warmup S] [--connections N]
                         [--threads N]
                         [--persistence always|off|both] [--streams N]
                         [--profile-requests N] [--no-toy] [--output PATH]

wrk must be installed (Debian's package ``wrk``, see docs/performance.md); without it
the benchmark says so and does not run.

One module per concern: ``constants`` (targets, sizes), ``wrk`` (the load generator and
one measured run), ``service`` (redis-server and gunicorn), ``client`` (setting games up
over HTTP, wrk's data files), ``streams`` (open event streams), ``memory`` (Redis memory
per game), ``measure`` (one persistence setting, in rounds), ``report`` (the Markdown
tables), ``cli`` (the command); the machine's CPU and load are read by
:mod:`bench.machine`.
"""

from bench.http.cli import main, unavailable
from bench.http.wrk import Unavailable, find_wrk

__all__ = ["Unavailable", "find_wrk", "main", "unavailable"]
