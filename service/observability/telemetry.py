"""Request ids, the JSON request log and the HTTP metrics.

One JSON line per request on stderr (logger ``patience.request``): ``request_id``,
``method``, ``path``, ``route``, ``status``, ``duration_ms``, ``game_id`` (if any),
``code`` (of a problem answer), ``client``.  Bodies and headers are never logged, so no
line holds a token, a seed, a salt or a stock card.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import sys
import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service.observability import metrics

if TYPE_CHECKING:
    from flask import Flask

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

#: The standard library's C encoder, with its ", " and ": ": the lines read exactly as
#: they always have (people and scripts grep for '"status": 500').
_dumps = json.JSONEncoder(default=str).encode


class JsonLines(logging.Formatter):
    """One JSON object per record: ``level``, ``logger``, ``message``, the record's
    ``extra`` fields, ``exc_info`` / ``stack_info`` (as text) when there are any, and
    ``time`` (UTC, ISO 8601): the lines python-json-logger wrote, for a third of the
    cost."""

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
        return _dumps(line)


def json_formatter() -> logging.Formatter:
    return JsonLines()


class _Stderr(logging.StreamHandler):
    """A handler on whatever ``sys.stderr`` is now (test runners swap it).

    Request lines written straight (:func:`_log_request`) wait, with ``flush_seconds``
    set, in a batch that a thread of the process writes every ``flush_seconds`` (or
    sooner, once it holds ``BATCH_BYTES``), in one write: the lines of a busy process
    cost one system call per batch instead of one per request.  A new ``flush_seconds``
    takes effect at once: the thread writes what waits and starts the new period.
    Every other record is written at once, after the batch before it, so the log keeps
    its order; ``flush()`` (which ``logging`` calls at exit) writes what waits.  A
    process killed outright loses the lines of its last ``flush_seconds``."""

    BATCH_BYTES = 64 * 1024

    def __init__(self):
        super().__init__()
        self._flush_seconds = 0.0
        self._period_changed = threading.Event()
        self._batch: list[str] = []
        self._batch_bytes = 0
        self._flusher: threading.Thread | None = None
        os.register_at_fork(after_in_child=self._forked)

    @property
    def flush_seconds(self) -> float:
        return self._flush_seconds

    @flush_seconds.setter
    def flush_seconds(self, seconds: float) -> None:
        self._flush_seconds = seconds
        self._period_changed.set()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            with self.lock:
                self._write(self._take_batch() + line + "\n")
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def write_line(self, line: str) -> None:
        """The request line ``line``: in the batch, or at once without ``flush_seconds``."""
        with self.lock:
            if self.flush_seconds <= 0:
                self._write(line + "\n")
                return
            self._batch.append(line)
            self._batch_bytes += len(line) + 1
            if self._batch_bytes >= self.BATCH_BYTES:
                self._write(self._take_batch())
            elif self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_every,
                                                 name="request-log", daemon=True)
                self._flusher.start()

    def flush(self) -> None:
        with self.lock:
            self._write(self._take_batch())

    def _take_batch(self) -> str:
        """The lines waiting, as one text (the caller holds the lock)."""
        if not self._batch:
            return ""
        text = "\n".join(self._batch) + "\n"
        self._batch.clear()
        self._batch_bytes = 0
        return text

    def _write(self, text: str) -> None:
        """``text`` in one write (the caller holds the lock).  Python's own stderr
        writes through to its file descriptor; a stream that buffers is flushed."""
        if not text:
            return
        stream = sys.stderr
        stream.write(text)
        if not (getattr(stream, "write_through", False)
                or getattr(stream, "line_buffering", False)):
            stream.flush()

    def _flush_every(self) -> None:
        while True:
            self._period_changed.clear()
            period = self._flush_seconds
            self._period_changed.wait(period if period > 0 else None)
            self.flush()

    def _forked(self) -> None:
        """In a new process (a request or events process): no thread yet, and the parent's lines
        are the parent's to write."""
        self._batch, self._batch_bytes, self._flusher = [], 0, None
        self._period_changed = threading.Event()


def _one_line_warning(record: logging.LogRecord) -> bool:
    """A logger of the rate limits that logs a traceback when its Redis fails (they fail
    open): make it a one-line warning naming the error."""
    if record.exc_info and record.exc_info[1] is not None:
        record.msg = f"{record.getMessage()}: {record.exc_info[1]!r}"
        record.args, record.exc_info, record.exc_text = (), None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


def configure_logging(level: str, flush_seconds: float | None = None) -> None:
    """JSON lines on stderr for the service's loggers (and the rate limits'), once;
    request lines in batches of ``flush_seconds`` (:class:`_Stderr`; None: as they
    were, at once the first time)."""
    for name in ("patience", "flask-limiter"):
        logger = logging.getLogger(name)
        logger.setLevel(level)
        handler = next((h for h in logger.handlers if h.get_name() == _HANDLER_NAME), None)
        if handler is None:
            handler = _Stderr()
            handler.set_name(_HANDLER_NAME)
            handler.setFormatter(json_formatter())
            logger.addHandler(handler)
        if flush_seconds is not None:
            handler.flush_seconds = max(0.0, flush_seconds)
        logger.propagate = False
    limiter_logger = logging.getLogger("flask-limiter")
    if _one_line_warning not in limiter_logger.filters:
        limiter_logger.addFilter(_one_line_warning)


def _new_request_id() -> str:
    """32 random hex digits, like a uuid4's, without a system call: a request id tells
    lines apart, it guards nothing (``random`` is reseeded in every forked process)."""
    return f"{random.getrandbits(128):032x}"


#: What a request leaves in its WSGI environ for :class:`RequestTelemetry`.
_ID, _CODE, _RETRY_AFTER = "patience.request_id", "patience.code", "patience.retry_after"
#: The environ key of when a layer outside this one received the request
#: (``time.perf_counter()``; :mod:`service.runtime.slots`): an answer's time counts from
#: there, the wait for its turn included.
ARRIVED = "patience.arrived"
#: The environ key of a callable that gives the request's turn through the app back
#: before a long computation (a hint's search), so that the requests behind it need not
#: wait for it (:mod:`service.runtime.slots`); absent where requests take no turns.
LEAVE_TURN = "patience.leave_turn"


def note_problem(code: str) -> None:
    """Name the problem code of the current request's answer, for its log line."""
    from flask import request  # here: the solver's worker logs with no Flask loaded

    request.environ[_CODE] = code


def keep_retry_after(seconds: str) -> None:
    """Give the current answer ``Retry-After: <seconds>`` of the view's own (an analysis
    under way).  This layer sets it once every hook has run: the rate limiter, which
    adds one to every answer, would otherwise raise it to its window's reset."""
    from flask import request

    request.environ[_RETRY_AFTER] = seconds


class RequestTelemetry:
    """The WSGI layer around the Flask app that gives every answer its ``X-Request-ID``
    (the client's, if it is a sane one) and ``Vary: Origin`` (the CORS headers come only
    with an Origin), and, once the app has answered, counts it in the metrics and writes
    its line in the request log.  With ``limiter``, it also turns the rate limiter's
    ``RateLimit-Reset`` timestamp into the draft's seconds and drops the ``Retry-After``
    it adds to answers that are neither 429 nor 503.

    A layer around the app rather than Flask request hooks: it edits the header list the
    app hands to the server, and reads the route from the request the app made, for a
    fraction of the cost of the hooks' dispatch and of Werkzeug's header objects (every
    answer pays it)."""

    def __init__(self, wsgi_app, *, limiter: bool):
        self.wsgi_app = wsgi_app
        self.limiter = limiter

    def __call__(self, environ, start_response):
        started = environ.get(ARRIVED) or time.perf_counter()
        given = environ.get("HTTP_X_REQUEST_ID")
        request_id = environ[_ID] = (given if given and _REQUEST_ID.fullmatch(given)
                                     else _new_request_id())
        answered = []

        def start(status, headers, exc_info=None):
            # The app's request is in the environ until the app returns (Flask then
            # drops it): take it now.
            answered.append((status, environ.get("werkzeug.request")))
            self._headers(environ, status, headers, request_id)
            return start_response(status, headers, exc_info)

        result = self.wsgi_app(environ, start)
        if answered:
            status, req = answered[-1]
            self._finish(environ, req, int(status[:3]), time.perf_counter() - started,
                         request_id)
        return result

    def _headers(self, environ, status: str, headers: list, request_id: str) -> None:
        headers.append(("X-Request-ID", request_id))
        for i, (name, value) in enumerate(headers):
            if name.lower() == "vary":
                if "origin" not in value.lower():
                    headers[i] = (name, f"{value}, Origin")
                break
        else:
            headers.append(("Vary", "Origin"))
        own = environ.get(_RETRY_AFTER)
        if own is not None or self.limiter:
            _limiter_headers(headers, status, own)

    @staticmethod
    def _finish(environ, req, status: int, duration: float, request_id: str) -> None:
        rule = getattr(req, "url_rule", None)
        route = rule.rule if rule is not None else "unmatched"
        method = environ.get("REQUEST_METHOD", "")
        if method not in _METHODS:
            method = "OTHER"
        metrics.child(metrics.HTTP_REQUESTS, method, route, str(status)).inc()
        metrics.child(metrics.HTTP_LATENCY, method, route).observe(duration)
        if not log.isEnabledFor(logging.INFO):
            return
        fields = {
            "request_id": request_id, "method": method,
            "path": req.path if req is not None else environ.get("PATH_INFO", ""),
            "route": route, "status": status, "duration_ms": round(duration * 1000, 3),
            "client": req.remote_addr if req is not None else environ.get("REMOTE_ADDR"),
        }
        view_args = getattr(req, "view_args", None)
        if view_args and "game_id" in view_args:
            fields["game_id"] = view_args["game_id"]
        code = environ.get(_CODE)
        if code is not None:
            fields["code"] = code
        _log_request(fields)


def _limiter_headers(headers: list, status: str, own: str | None) -> None:
    """The rate limiter adds ``Retry-After`` to a 429 or 503 and raises a view's own to
    its window's reset: keep the view's own (``own``), else keep it only on a 429 or a 503;
    and its ``RateLimit-Reset`` is a timestamp, the draft's is seconds."""
    keep_limiter_retry = status[:3] in ("429", "503")
    kept = []
    for name, value in headers:
        lowered = name.lower()
        if lowered == "retry-after":
            if own is not None or not keep_limiter_retry:
                continue
        elif lowered == "ratelimit-reset" and value.isdigit():
            value = str(max(0, int(value) - int(time.time())))
        kept.append((name, value))
    if own is not None:
        kept.append(("Retry-After", own))
    headers[:] = kept


def _log_request(fields: dict) -> None:
    """The request line: written straight to the stream by the service's own handler
    when it is the only one that would see it (the usual case: the line is the same,
    the logging machinery's records, locks and lookups are skipped), else logged as
    any other record."""
    handler = _only_handler()
    if handler is None:
        log.handle(log.makeRecord(log.name, logging.INFO, "", 0, "request", (), None,
                                  extra={FIELDS: fields}))
        return
    line = {"level": "INFO", "logger": log.name, "message": "request", **fields,
            "time": datetime.now(UTC).isoformat()}
    handler.write_line(_dumps(line))


def _only_handler() -> _Stderr | None:
    """The service's stderr handler if it alone would handle a request line (no other
    handler, no filter on the way), else None."""
    if log.handlers or log.filters or not log.propagate:
        return None
    parent = log.parent
    if parent is None or parent.filters or parent.propagate or len(parent.handlers) != 1:
        return None
    handler = parent.handlers[0]
    if type(handler) is not _Stderr or handler.filters or handler.level > logging.INFO:
        return None
    return handler


def init_app(app: Flask) -> None:
    """The JSON request log and :class:`RequestTelemetry` around the app's WSGI callable
    (call it after the other WSGI layers: it must see the answer they send)."""
    configure_logging(app.config["LOG_LEVEL"], app.config["LOG_FLUSH_SECONDS"])
    app.wsgi_app = RequestTelemetry(app.wsgi_app, limiter=bool(app.config["RATELIMIT_ENABLED"]))
