"""``python -m bench follow``: many followers of live games on one instance of `make run`.

One instance of ``python -m devtools.devserver`` (what ``make run`` runs: its own Redis,
the request group and the events group) on a free port, rate limits off.  Then:

1. **moves alone**: a closed-loop player sends the moves of precomputed walks
   (``bench/walks.py``) to games nobody follows, on ``--connections`` keep-alive
   connections, for ``--throughput-seconds``: the moves' throughput without followers;
2. **followers**: ``--followers`` Server-Sent Events streams (``GET .../events``, real
   TCP connections, asyncio, in ``--processes`` processes) spread evenly over ``--games``
   other games, opened at ``--open-rate`` per second; once all are open and idle, the
   resident memory (RSS, and PSS) of the events group's processes;
3. **live**: a paced player plays those games at ``--rate`` moves per second in total,
   round robin, for ``--seconds``; every follower checks that its event ids go up by
   one, and the delay of each move is from its 200 to its event reaching the last of
   its game's followers;
4. **moves with followers**: the closed-loop player again on unfollowed games, while the
   followers stay connected and the paced player keeps playing: the moves' throughput
   with followers, as a share of step 1's.

Printed next to the targets and written into ``bench/RESULTS.md`` (its own section,
replaced on each run).

One module a job: ``client`` (a minimal HTTP/1.1 client: games and their moves),
``players`` (the closed-loop and the paced player), ``followers`` (the follower
processes and what they received), ``phases`` (a measured phase and the cores each part
kept busy), ``report`` (the section and its targets), ``cli`` (the command and the run).
The instance is started by :class:`devtools.launch.DevServer`; the CPU and memory of its
processes are read by :mod:`devtools.processes`.
"""

from bench.follow.cli import main

__all__ = ["main"]
