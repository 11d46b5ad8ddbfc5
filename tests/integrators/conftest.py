"""Fixtures of the integrators' tests: the service as an integrator meets it, a real
gunicorn (the command of `make run`) over a real Redis of its own, on free ports.

Each test module gets its own Redis and gunicorn, so that what one module stores (the
statistics, say) never shows in another's outputs.
"""

from __future__ import annotations

import pytest

from devtools.redis_server import RedisServer
from tests.e2e.support import Gunicorn


@pytest.fixture(scope="module")
def api(request, tmp_path_factory):
    """``Gunicorn`` (``.base`` is its URL) over a Redis of its own, for one module, with
    the module's ``API_ENV`` (a dict) on top of the environment."""
    redis = RedisServer(tmp_path_factory.mktemp("integrators-redis"))
    redis.start()
    try:
        log = tmp_path_factory.mktemp("integrators-gunicorn") / "gunicorn.log"
        env = {"WEB_CONCURRENCY": "1", **getattr(request.module, "API_ENV", {})}
        with Gunicorn(redis.url, log, **env) as server:
            yield server
    finally:
        redis.stop()
