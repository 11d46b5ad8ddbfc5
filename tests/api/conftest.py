"""Fixtures of the API tests: an app on the session's Redis (emptied before each test),
its test client, a raw Redis client to check the stored state, and the log lines."""

from __future__ import annotations

import logging

import pytest

from service.app import close_app
from tests.api.support import LogLines, make_app
from tests.contract import ValidatingClient


@pytest.fixture
def app(clean_redis, redis_url):
    app = make_app(redis_url)
    app.test_client_class = ValidatingClient  # every answer is checked against openapi.yaml
    yield app
    close_app(app)
    # The last-resort handler answers 500: no request of an API test may reach it.
    assert 500 not in app.statuses


@pytest.fixture
def daily_app(clean_redis, redis_url):
    """An app whose daily deal takes any player (``DAILY_ACCOUNT_RULE`` any), with no
    inline search for a winnable deal (the tests fill the pools)."""
    apps = []

    def make(**config):
        settings = {"DAILY_ACCOUNT_RULE": "any", "WINNABLE_SEARCH_SECONDS": 0,
                    "DAILY_CLOSE_GRACE_SECONDS": 0}
        settings.update(config)
        app = make_app(redis_url, **settings)
        apps.append(app)
        return app

    yield make
    for app in apps:
        close_app(app)
        assert 500 not in app.statuses


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def redis_db(clean_redis):
    """The session's Redis, as a raw client (FLUSHALL before the test)."""
    return clean_redis


@pytest.fixture
def log_lines():
    """Every line the service's loggers write during the test, formatted as in production."""
    handler = LogLines()
    loggers = [logging.getLogger(name) for name in ("patience", "flask-limiter")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)
