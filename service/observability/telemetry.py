"""Request ids, the JSON request log and the HTTP metrics.

One JSON line per request on stderr (logger ``patience.request``): ``request_id``,
``method``, ``path``, ``route``, ``status``, ``duration_ms``, ``game_id`` (if any),
``code`` (of a problem answer), ``client``.  Bodies and headers are never logged, so no
line holds a token, a seed, a salt or a stock card.
"""

from __future__ import annotations

import logging
import random
import re
import sys
import time
from datetime import UTC, datetime

import orjson
from flask import Flask, Response, g, request

from service.observability import metrics

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_HANDLER_NAME = "patience-json"

log = logging.getLogger("patience.request")


#: The attributes every LogRecord has: the others are the ``extra`` fields of a line.
_RECORD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message", "asctime", "taskName"}


#: ``extra={FIELDS: {...}}``: a line's fields as one dict, read as they are (for the
#: request line: makeRecord copies one attribute, the formatter scans none).
FIELDS = "_fields"


class JsonLines(logging.Formatter):
    """One JSON object per record: ``level``, ``logger``, ``message``, the record's
    ``extra`` fields, ``exc_info`` / ``stack_info`` (as text) when there are any, and
    ``time`` (UTC, ISO 8601): the lines python-json-logger wrote, compact (orjson), for
    a fraction of the cost."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"level": record.levelname, "logger": record.name,
                "message": record.getMessage()}
        fields = record.__dict__.get(FIELDS)
        if fields is not None:  # the request line: its fields in one dict
            line.update(fields)
        else:
            for key, value in record.__dict__.items():
                if key not in _RECORD_ATTRS and not key.startswith("_"):
                    line[key] = value
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc_info"] = record.exc_text
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        line["time"] = datetime.fromtimestamp(record.created, UTC).isoformat()
        return orjson.dumps(line, default=str).decode()


def json_formatter() -> logging.Formatter:
    return JsonLines()


class _Stderr(logging.StreamHandler):
    """A handler on whatever ``sys.stderr`` is now (test runners swap it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass

    def emit(self, record: logging.LogRecord) -> None:
        """The line in one write.  Python's own stderr writes through to its file
        descriptor, so the write sends it on: StreamHandler's flush after it (another
        lock and call, per request line) is kept for a stream that buffers."""
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            if not (getattr(stream, "write_through", False)
                    or getattr(stream, "line_buffering", False)):
                stream.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


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


def _new_request_id() -> str:
    """32 random hex digits, like a uuid4's, without a system call: a request id tells
    lines apart, it guards nothing (``random`` is reseeded in every forked worker)."""
    return f"{random.getrandbits(128):032x}"


def _start() -> None:
    environ = request.environ
    environ[_STARTED] = time.perf_counter()
    given = environ.get("HTTP_X_REQUEST_ID")
    environ[_ID] = given if given and _REQUEST_ID.fullmatch(given) else _new_request_id()


#: Where :func:`_start` leaves the time and id of the request: its WSGI environ, which
#: every part of a request can read for the price of a dict lookup.
_STARTED, _ID = "patience.started", "patience.request_id"


def _finisher(limiter: bool):
    """The after-request hook: the ``X-Request-ID`` header, the draft's ``RateLimit-Reset``
    (with ``limiter``: flask-limiter writes a timestamp), the metrics and the log line."""

    def finish(response: Response) -> Response:
        req = request._get_current_object()  # one context lookup, not one per attribute
        environ = req.environ
        started = environ.get(_STARTED)
        duration = time.perf_counter() - started if started is not None else 0.0
        request_id = environ.get(_ID) or _new_request_id()
        headers = response.headers
        headers.add("X-Request-ID", request_id)
        status = response.status_code
        # A view that means its Retry-After says so in ``g.retry_after`` (an analysis under
        # way); flask-limiter adds one to every answer and raises a view's own to its
        # window's reset.
        own = g.get("retry_after")
        if own is not None:
            headers["Retry-After"] = own
        elif limiter:
            if status not in (429, 503) and "Retry-After" in headers:
                del headers["Retry-After"]
            reset = headers.get("RateLimit-Reset")
            if reset and reset.isdigit():  # a timestamp; the draft wants seconds
                headers["RateLimit-Reset"] = str(max(0, int(reset) - int(time.time())))
        rule = req.url_rule
        route = rule.rule if rule is not None else "unmatched"
        method = req.method if req.method in _METHODS else "OTHER"
        counted, timed = _series(method, route, status)
        counted.inc()
        timed.observe(duration)
        if log.isEnabledFor(logging.INFO):
            fields = {
                "request_id": request_id, "method": method, "path": req.path, "route": route,
                "status": status, "duration_ms": round(duration * 1000, 3),
                "client": req.remote_addr,
            }
            view_args = req.view_args
            if view_args and "game_id" in view_args:
                fields["game_id"] = view_args["game_id"]
            code = getattr(response, "problem_code", None)
            if code is not None:
                fields["code"] = code
            # What log.info("request", extra=...) does, less the search of the caller's
            # frame for a file and line that no line shows: a third of its cost.
            log.handle(log.makeRecord(log.name, logging.INFO, "", 0, "request", (), None,
                                      extra={FIELDS: fields}))
        return response

    return finish


_SERIES: dict[tuple[str, str, int], tuple] = {}


def _series(method: str, route: str, status: int) -> tuple:
    """The request counter and the latency histogram of one (method, route, status),
    looked up once: ``labels()`` takes a lock and checks its arguments every time.
    Routes are the app's rule templates (or "unmatched"), so the keys are few."""
    found = _SERIES.get((method, route, status))
    if found is None:
        found = (metrics.HTTP_REQUESTS.labels(method, route, str(status)),
                 metrics.HTTP_LATENCY.labels(method, route))
        _SERIES[(method, route, status)] = found
    return found


def init_app(app: Flask) -> None:
    """Register the request hooks: call before any other extension's, so that the log
    line and the metrics see the final response (after_request runs last-in first)."""
    configure_logging(app.config["LOG_LEVEL"])
    app.before_request(_start)
    app.after_request(_finisher(limiter=bool(app.config["RATELIMIT_ENABLED"])))
