"""Development tooling, in a source checkout only (not in the installed package): ``make
run`` and the processes the tests and the benchmarks start.

- :mod:`devtools.devserver`: ``make run`` (``python -m devtools.devserver``): its own
  Redis, the solver's worker and both gunicorn groups;
- :mod:`devtools.launch`: the one launcher of gunicorn, the solver's worker and ``make
  run`` itself, on the command lines the Dockerfile and the compose files run;
- :mod:`devtools.redis_server`: a real redis-server, and a local Redis Cluster;
- :mod:`devtools.processes`: child processes that die with their parent, found and
  measured through Linux ``/proc``.
"""
