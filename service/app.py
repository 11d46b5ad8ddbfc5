"""The Flask application factory: ``create_app()`` (gunicorn: ``service.app:create_app()``)."""

from __future__ import annotations

import os
import secrets
import time

from flask import Flask, request
from flask.sessions import SessionInterface
from flask_cors import CORS
from werkzeug.exceptions import RequestTimeout, TooManyRequests
from werkzeug.middleware.proxy_fix import ProxyFix

from service import api
from service.api import identity
from service.api.context import ServiceApp
from service.api.docs import bp as docs_bp
from service.api.meta import UNLIMITED
from service.api.web import bp as web_bp
from service.config import read_config
from service.observability import telemetry
from service.services import Services, build_services
from service.storage.backend import client_options, open_backend
from service.storage.rate_limits import RateCounters

CORS_ALLOW_HEADERS = ["Authorization", "Content-Type", "If-Match", "If-None-Match",
                      "Idempotency-Key", "X-Request-ID", "Last-Event-ID"]
CORS_EXPOSE_HEADERS = ["ETag", "Location", "Retry-After", "RateLimit-Limit",
                       "RateLimit-Remaining", "RateLimit-Reset", "X-Request-ID"]


def create_app(test_config: dict | None = None) -> ServiceApp:
    app = ServiceApp(__name__)
    app.config.from_mapping(read_config())
    if test_config is not None:
        app.config.from_mapping(test_config)
    _check_secret_key(app, testing=test_config is not None)
    app.session_interface = _NoSessions()
    if app.config["TRUST_PROXY"]:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1)
    app.wsgi_app = _any_host(app.wsgi_app)
    app.wsgi_app = _body_deadline(app.wsgi_app, app.config["BODY_TIMEOUT_SECONDS"])
    telemetry.init_app(app)  # around the others: it sees what they answer
    # "/v1/games//moves" is no resource (404), not a 308 redirect to "/v1/games/moves".
    app.url_map.merge_slashes = False

    app.services = build_services(app.config)
    if app.config["PROMETHEUS_MULTIPROC_DIR"]:
        os.makedirs(app.config["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)
    _init_limiter(app, app.services)
    # CORS headers only for the requests that ask (a browser sends Origin with every
    # cross-origin request): working them out for every other request would cost CPU for
    # nothing.  Answers therefore vary with Origin, and say so for caches.
    CORS(app, origins="*", send_wildcard=True, always_send=False,
         methods=["GET", "POST", "DELETE", "OPTIONS"], allow_headers=CORS_ALLOW_HEADERS,
         expose_headers=CORS_EXPOSE_HEADERS, max_age=600)
    hooks = app.after_request_funcs[None]
    cors_hook = hooks.pop()  # flask-cors' hook, registered just now
    if cors_hook.__name__ != "cors_after_request":
        raise RuntimeError(f"flask-cors registered {cors_hook!r}, not its after-request hook")
    hooks.append(_cross_origin(cors_hook))
    api.register(app)
    app.register_blueprint(docs_bp)  # /docs: Swagger UI over /v1/openapi.yaml
    app.register_blueprint(web_bp)  # /: the reference web client (service/web/)
    return app


def close_app(app: ServiceApp) -> None:
    """Close the app's Redis connections (the events feed's, then the backend's)."""
    app.services.close()


#: The shortest ``SECRET_KEY`` accepted: a short key could be guessed from what Redis holds.
MIN_SECRET_KEY = 32


def _check_secret_key(app: Flask, *, testing: bool) -> None:
    """``SECRET_KEY`` seals the stored first answers of idempotent writes (a create's holds
    the player token): every process and replica needs the same one, so production refuses
    to start without it.  An app built for tests (with a test config) that sets none gets
    a random key of its own."""
    key = app.config.get("SECRET_KEY")
    if not key and testing:
        key = app.config["SECRET_KEY"] = secrets.token_urlsafe(32)
    if not isinstance(key, str) or len(key) < MIN_SECRET_KEY:
        raise RuntimeError(
            f"SECRET_KEY must be set to a random string of at least {MIN_SECRET_KEY} "
            "characters, the same for every process and replica (generate one with "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")


class _NoSessions(SessionInterface):
    """The API keeps no session: with ``SECRET_KEY`` set, Flask would otherwise look for a
    signed session cookie on every request (``SECRET_KEY`` seals idempotency records
    here, it signs no cookie)."""

    def open_session(self, app, request):
        return self.make_null_session(app)

    def save_session(self, app, session, response) -> None:
        return None


def _cross_origin(cors_after_request):
    """flask-cors' after-request hook, run only for a request with an ``Origin``: it adds
    nothing to any other (``always_send`` is off).  Every answer says ``Vary: Origin``
    (:class:`~service.observability.telemetry.RequestTelemetry`)."""

    def hook(response):
        if "HTTP_ORIGIN" in request.environ:
            return cors_after_request(response)
        return response

    return hook


def _any_host(wsgi_app):
    """No route depends on the host, but Werkzeug refuses (400, before any view) a Host
    header that it cannot encode as IDNA (an empty or over-long label: ``a..b``), which
    openapi.yaml documents nowhere.  Such a header is dropped, as if the client had sent
    none (WSGI's SERVER_NAME stands in), so every Host gets the documented answers."""

    good: set[str] = set()  # hosts seen to encode: the few names the server is called by

    def app(environ, start_response):
        host = environ.get("HTTP_HOST")
        if host and host not in good:
            try:
                host.lower().encode("idna")
            except UnicodeError:
                del environ["HTTP_HOST"]
            else:
                if len(good) < 64:
                    good.add(host)
        return wsgi_app(environ, start_response)

    return app


def _body_deadline(wsgi_app, seconds: float):
    """Under gunicorn, the request body must arrive within ``seconds`` of the request
    (its headers read): each read of ``wsgi.input`` waits on the client's socket only
    until then, and a read that would wait longer answers 408 ``request_timeout``.
    gunicorn then closes the connection (the failed read leaves the rest of the body
    unknown).  Without it a body shorter than its Content-Length would hold a gunicorn
    thread until the client gave up.  The socket's own timeout is restored once the app
    has answered; a request whose body is never read is untouched (gunicorn bounds the
    discarding of an unread body itself)."""
    if not seconds:
        return wsgi_app

    def app(environ, start_response):
        sock = environ.get("gunicorn.socket")
        if sock is None or not hasattr(sock, "settimeout"):
            return wsgi_app(environ, start_response)
        body = _DeadlineInput(environ["wsgi.input"], sock, time.monotonic() + seconds)
        environ["wsgi.input"] = body
        try:
            return wsgi_app(environ, start_response)
        finally:
            body.restore()

    return app


class _DeadlineInput:
    """``wsgi.input`` whose reads wait on the socket until a deadline at most."""

    def __init__(self, stream, sock, deadline: float):
        self._stream, self._sock, self._deadline = stream, sock, deadline
        self._prior: float | None = None
        self._changed = False

    def _call(self, method: str, *args):
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise RequestTimeout()
        if not self._changed:
            self._prior, self._changed = self._sock.gettimeout(), True
        self._sock.settimeout(remaining)
        try:
            return getattr(self._stream, method)(*args)
        except TimeoutError:
            raise RequestTimeout() from None

    def read(self, size=None):
        return self._call("read", size)

    def readline(self, size=None):
        return self._call("readline", size)

    def readlines(self, hint=None):
        return self._call("readlines", hint)

    def __iter__(self):
        return iter(self.readline, b"")

    def restore(self) -> None:
        if self._changed:
            self._sock.settimeout(self._prior)
            self._changed = False


def client_address() -> str:
    """The client's address: the peer (the proxy's client with TRUST_PROXY)."""
    return request.remote_addr or "unknown"


def rate_limit_key() -> str:
    """The rate-limit key: the player of a request with a valid player identity, else
    the client's address (:func:`service.api.identity.rate_limit_key`)."""
    return identity.rate_limit_key(client_address())


def _init_limiter(app: Flask, services: Services) -> None:
    """Per-client limits (``RATELIMIT_APPLICATION``: one budget per client for every
    route but the probes), counted in each process and reconciled with Redis in batches,
    so that every process and replica shares them
    (:class:`~service.storage.rate_limits.RateCounters`, whose docstring says how exact
    they are).  Every counted answer carries ``RateLimit-Limit``, ``-Remaining`` and
    ``-Reset``; a client past its budget gets 429 ``rate_limited``.

    Fail open: while the counters' Redis cannot be reached, requests go on uncounted and
    without the headers; a request that needs the game store then answers 503 from the
    store, while /healthz, /v1/variants and the OpenAPI document keep working.  A Redis
    outage never turns into a 500 or a 429, and nothing connects when the app is made.
    """
    config = app.config
    if not config["RATELIMIT_ENABLED"]:
        return
    if config["RATELIMIT_STRATEGY"] != "fixed-window":
        raise RuntimeError("RATELIMIT_STRATEGY: the rate limits count fixed windows "
                           f"(`fixed-window`), not {config['RATELIMIT_STRATEGY']!r}")
    own = config.get("RATELIMIT_STORAGE_URI")
    if own == "memory://":
        connections = None  # this process alone
    elif not own or own == config["REDIS_URL"]:
        connections = services.limiter_connections
    else:
        connections = open_backend(own, client_options(config)).connections
    counters = RateCounters(config["RATELIMIT_APPLICATION"], connections,
                            prefix=config["RATELIMIT_KEY_PREFIX"],
                            sync_hits=config["RATELIMIT_SYNC_HITS"],
                            sync_seconds=config["RATELIMIT_SYNC_SECONDS"])
    names = (config["RATELIMIT_HEADER_LIMIT"], config["RATELIMIT_HEADER_REMAINING"],
             config["RATELIMIT_HEADER_RESET"])

    @app.before_request
    def count_request():
        if request.endpoint in UNLIMITED:
            return
        verdict = counters.hit(rate_limit_key())
        if verdict is None:
            return
        request.environ[_VERDICT] = verdict
        if not verdict.allowed:
            raise TooManyRequests(str(verdict.limit))

    app.after_request(lambda response: _rate_limit_headers(response, names))


def _rate_limit_headers(response, names: tuple[str, str, str]):
    """The ``RateLimit-*`` headers of a counted request's answer (``names``: the limit's,
    the remaining's and the reset's), and ``Retry-After`` on a 429: when the window
    ends.  A 503 keeps its own ``Retry-After`` (when its trouble may be over: a storage
    failover, a deal not ready yet), whatever the client's window."""
    verdict = request.environ.get(_VERDICT)
    if verdict is None:
        return response
    limit_header, remaining_header, reset_header = names
    headers = response.headers
    reset = int(verdict.reset)
    headers.add(limit_header, str(verdict.limit.amount))
    headers.add(remaining_header, str(verdict.remaining))
    # A timestamp: the telemetry layer turns it into seconds from now.
    headers.add(reset_header, str(reset))
    if response.status_code == 429:
        # Retry when the window ends, or later if the answer says so.
        now = time.time()
        retry = headers.get("Retry-After")
        if retry is not None and retry.isdigit():
            reset = max(reset, int(now + int(retry)))
        headers["Retry-After"] = str(max(0, int(reset - now)))
    return response


#: Where a request keeps its rate-limit verdict for its answer's headers.
_VERDICT = "patience.rate_limit"
