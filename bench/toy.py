"""The reference endpoints: the floor of the stack, served like the service.

A move request is measured against what the stack itself can do on the same machine in
the same run: ``python -m bench http`` serves this app with the production
request group's settings (same worker class, workers, threads, keep-alive) against a Redis
of the same persistence, and loads it with the same wrk:

- ``GET /toy/json``: a bare Flask JSON endpoint (no request log, no metrics, no CORS);
- ``GET /toy/read/<n>``: reads a 1 KiB JSON value from Redis and answers it;
- ``POST /toy/write/<n>``: reads that value, changes it, and writes it back with a Lua
  compare-and-set (``GET`` then ``EVALSHA``: two round trips, as a move makes).  A lost
  race (another connection wrote the key in between) is read and tried again.

    gunicorn -c python:service.runtime.request_group 'bench.toy:create_app()'

(``REDIS_URL`` names the Redis)

Nothing of the service is imported: this is the floor a real request builds on.
"""

from __future__ import annotations

import json
import os

import redis
from flask import Flask, Response, jsonify

KEYS = 1024  # values 0..KEYS-1, created on first use
VALUE_BYTES = 1024

# KEYS[1]: the key; ARGV[1]: the value read; ARGV[2]: the new value.
_CAS = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
end
return 0
"""


def value(n: int, version: int) -> str:
    """A JSON object of VALUE_BYTES characters: a version and padding."""
    head = {"n": n, "version": version, "pad": ""}
    pad = VALUE_BYTES - len(json.dumps(head, separators=(",", ":")))
    head["pad"] = "x" * max(0, pad)
    return json.dumps(head, separators=(",", ":"))


def create_app() -> Flask:
    app = Flask(__name__)
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    cas = client.register_script(_CAS)

    def key(n: int) -> str:
        return f"toy:{n % KEYS}"

    def current(n: int) -> bytes:
        found = client.get(key(n))
        if found is None:
            client.set(key(n), value(n % KEYS, 0), nx=True)
            found = client.get(key(n))
        return found

    @app.get("/toy/json")
    def bare():
        return jsonify(status="ok")

    @app.get("/toy/read/<int:n>")
    def read(n: int):
        return Response(current(n), mimetype="application/json")

    @app.post("/toy/write/<int:n>")
    def write(n: int):
        for _ in range(16):
            old = current(n)
            record = json.loads(old)
            new = value(record["n"], record["version"] + 1)
            if cas(keys=[key(n)], args=[old, new]) == 1:
                return Response(new, mimetype="application/json")
        return Response('{"conflict":true}', status=409, mimetype="application/json")

    return app
