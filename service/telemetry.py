"""Request ids, the JSON request log and the HTTP metrics.

One JSON line per request on stderr (logger ``patience.request``): ``request_id``,
``method``, ``path``, ``route``, ``status``, ``duration_ms``, ``game_id`` (if any),
``code`` (of a problem answer), ``client``.  Bodies and headers are never logged, so no
line holds a token, a seed, a salt or a stock card.
"""

from __future__ import annotations

import logging
import re
import sys
import time
import uuid

from flask import Flask, Response, g, request
from pythonjsonlogger.json import JsonFormatter

from service import metrics

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_HANDLER_NAME = "patience-json"

log = logging.getLogger("patience.request")


def json_formatter() -> logging.Formatter:
    return JsonFormatter("%(levelname)s %(name)s %(message)s", timestamp="time",
                         rename_fields={"levelname": "level", "name": "logger"})


class _Stderr(logging.StreamHandler):
    """A handler on whatever ``sys.stderr`` is now (test runners swap it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def _one_line_warning(record: logging.LogRecord) -> bool:
    """flask-limiter logs a traceback each time its Redis fails (we fail open): make it a
    one-line warning naming the error."""
    if record.exc_info and record.exc_info[1] is not None:
        record.msg = f"{record.getMessage()}: {record.exc_info[1]!r}"
        record.args, record.exc_info, record.exc_text = (), None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


def configure_logging(level: str) -> None:
    """JSON lines on stderr for the service's loggers (and flask-limiter's), once."""
    for name in ("patience", "flask-limiter"):
        logger = logging.getLogger(name)
        logger.setLevel(level)
        if not any(handler.get_name() == _HANDLER_NAME for handler in logger.handlers):
            handler = _Stderr()
            handler.set_name(_HANDLER_NAME)
            handler.setFormatter(json_formatter())
            logger.addHandler(handler)
        logger.propagate = False
    limiter_logger = logging.getLogger("flask-limiter")
    if _one_line_warning not in limiter_logger.filters:
        limiter_logger.addFilter(_one_line_warning)


def _start() -> None:
    g.started = time.perf_counter()
    given = request.headers.get("X-Request-ID", "")
    g.request_id = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


def _finish(response: Response) -> Response:
    duration = time.perf_counter() - g.get("started", time.perf_counter())
    request_id = g.get("request_id") or uuid.uuid4().hex
    response.headers["X-Request-ID"] = request_id
    if response.status_code not in (429, 503):  # flask-limiter adds it to every answer
        response.headers.pop("Retry-After", None)
    reset = response.headers.get("RateLimit-Reset")
    if reset and reset.isdigit():  # flask-limiter writes a timestamp; the draft: seconds
        response.headers["RateLimit-Reset"] = str(max(0, int(reset) - int(time.time())))
    route = request.url_rule.rule if request.url_rule is not None else "unmatched"
    method = request.method if request.method in _METHODS else "OTHER"
    metrics.HTTP_REQUESTS.labels(method, route, str(response.status_code)).inc()
    metrics.HTTP_LATENCY.labels(method, route).observe(duration)
    fields = {
        "request_id": request_id, "method": method, "path": request.path, "route": route,
        "status": response.status_code, "duration_ms": round(duration * 1000, 3),
        "client": request.remote_addr,
    }
    game_id = (request.view_args or {}).get("game_id")
    if game_id is not None:
        fields["game_id"] = game_id
    code = getattr(response, "problem_code", None)
    if code is not None:
        fields["code"] = code
    log.info("request", extra=fields)
    return response


def init_app(app: Flask) -> None:
    """Register the request hooks: call before any other extension's, so that the log
    line and the metrics see the final response (after_request runs last-in first)."""
    configure_logging(app.config["LOG_LEVEL"])
    app.before_request(_start)
    app.after_request(_finish)
