"""What gunicorn's processes refuse before the app, answered as problem details.

A request that is not well-formed HTTP/1.1 (a request line or header fields too long, too
many header fields, a malformed request line, header or HTTP version...) never reaches
Flask: the process refuses it and closes the connection.  gunicorn (and gevent's server,
in the events group) would answer an HTML page or an empty body; :class:`ProblemRefusals`
(the request group's :class:`~service.runtime.request_process.RequestProcess`) and
:class:`ProblemRefusalHandler` (the events group's
:class:`~service.runtime.events_process.EventsProcess`) answer
``application/problem+json`` instead, with the app's own document
(:func:`service.api.errors.problem_body`) and a stable ``code``:

- 400 ``malformed_request``: the request line, method, HTTP version, a header field or
  the chunked framing is not valid HTTP/1.1;
- 414 ``uri_too_long``: a request line over ``limit_request_line`` (4094 bytes);
- 431 ``header_fields_too_large``: a header field over ``limit_request_field_size`` (8190
  bytes), or more than ``limit_request_fields`` (100) of them;
- 417 ``expectation_failed``: an ``Expect`` other than ``100-continue``;
- 501 ``unsupported_transfer_coding``: an unknown transfer coding;
- 403 ``forbidden``: a refused PROXY protocol header (only with the PROXY protocol on);
- 404 ``not_found``: a path outside ``SCRIPT_NAME`` (only with one set);
- 500 ``internal_error``: a bug (logged), never any input.

The detail is fixed per kind: nothing the client sent and nothing of the server's
internals is echoed.  The answer carries ``Connection: close`` and a fresh
``X-Request-ID`` (also in the log line), as every answer of the app does; it carries no
CORS headers, since the request's ``Origin`` was not read.
"""

from __future__ import annotations

import http.client
import ssl
import uuid
from http import HTTPStatus

from gunicorn.config import Config
from gunicorn.http import errors as gunicorn_errors

_LINE = "the request line is not valid HTTP/1.1 (method, target and version)"
_VERSION = "the HTTP version is not supported: send HTTP/1.0 or HTTP/1.1"
_HEADER = "a header field is malformed, or the body's length is ambiguous"
_CHUNKED = "the chunked body is malformed"
_BAD = "the request is not valid HTTP/1.1"
_TOO_LONG = "the request line (method, path and query) is too long"
_FIELDS = "a header field is too long, or there are too many header fields"
#: How a refusal's answer is told from gevent's own.
PROBLEM_MARK = b"Content-Type: application/problem+json\r\n"
_INTERNAL = (500, "internal_error", "the server failed to answer this request")

#: gunicorn's exceptions: (status, code, detail), the first class that matches.
_GUNICORN = (
    # A header the app sent is the app's bug, not the client's.
    ((gunicorn_errors.InvalidResponseHeader, gunicorn_errors.InvalidResponseHeaderName),
     _INTERNAL),
    (gunicorn_errors.LimitRequestLine, (414, "uri_too_long", _TOO_LONG)),
    (gunicorn_errors.LimitRequestHeaders, (431, "header_fields_too_large", _FIELDS)),
    ((gunicorn_errors.InvalidRequestLine, gunicorn_errors.InvalidRequestMethod,
      gunicorn_errors.InvalidH2CPreface), (400, "malformed_request", _LINE)),
    (gunicorn_errors.InvalidHTTPVersion, (400, "malformed_request", _VERSION)),
    ((gunicorn_errors.InvalidHeader, gunicorn_errors.InvalidHeaderName,
      gunicorn_errors.ObsoleteFolding, gunicorn_errors.InvalidSchemeHeaders),
     (400, "malformed_request", _HEADER)),
    ((gunicorn_errors.InvalidChunkSize, gunicorn_errors.ChunkMissingTerminator,
      gunicorn_errors.InvalidChunkExtension), (400, "malformed_request", _CHUNKED)),
    ((gunicorn_errors.InvalidProxyLine, gunicorn_errors.InvalidProxyHeader),
     (400, "malformed_request", "the PROXY protocol header is not valid")),
    (gunicorn_errors.ExpectationFailed,
     (417, "expectation_failed", "only Expect: 100-continue is understood")),
    (gunicorn_errors.UnsupportedTransferCoding,
     (501, "unsupported_transfer_coding", "send the body with Content-Length or chunked")),
    # A path outside SCRIPT_NAME (only when that is set): no resource there.
    (gunicorn_errors.ConfigurationProblem, (404, "not_found", "no resource at this path")),
    ((gunicorn_errors.ForbiddenProxyRequest, ssl.SSLError),
     (403, "forbidden", "the server refuses this connection")),
)


def classify(exc: BaseException) -> tuple[int, str, str]:
    """(status, code, detail) of what a gunicorn process raised for a request."""
    for kinds, answer in _GUNICORN:
        if isinstance(exc, kinds):
            return answer
    return _INTERNAL


#: gunicorn's limits (neither group changes them), which the events group's gevent server
#: is held to as well: one address or the other, the same refusals.
_LIMITS = Config()
LIMIT_REQUEST_LINE = _LIMITS.limit_request_line
LIMIT_REQUEST_FIELD_SIZE = _LIMITS.limit_request_field_size


class RequestLineTooLong(ValueError):
    """A request line over :data:`LIMIT_REQUEST_LINE` (gevent's server)."""


class HeaderFieldsTooLarge(ValueError):
    """A header field over :data:`LIMIT_REQUEST_FIELD_SIZE` (gevent's server; http.client,
    which reads the head there, marks a line over 64 KiB instead of raising, and raises
    past 100 fields, as many as gunicorn allows)."""


def classify_gevent(exc: BaseException) -> tuple[int, str, str]:
    """(status, code, detail) of what gevent's WSGI handler raised reading a request's head
    (:meth:`gevent.pywsgi.WSGIHandler._handle_client_error`): every one is the client's."""
    if isinstance(exc, RequestLineTooLong):
        return 414, "uri_too_long", _TOO_LONG
    if isinstance(exc, (HeaderFieldsTooLarge, http.client.HTTPException)):
        # http.client.parse_headers: a line over 64 KiB, or over 100 header fields.
        return 431, "header_fields_too_large", _FIELDS
    if "http version" in str(exc).lower():
        return 400, "malformed_request", _VERSION
    return 400, "malformed_request", _BAD


def response(status: int, code: str, detail: str) -> tuple[bytes, str]:
    """The whole HTTP/1.1 answer of a refusal, and its X-Request-ID."""
    # The app's own serialiser, imported when a refusal is made: the arbiter imports the
    # process classes before gevent patches a process, and the app's modules only after.
    from service.api.errors import PROBLEM_JSON, problem_body

    body = problem_body(status, code, detail)
    request_id = uuid.uuid4().hex
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            f"Content-Type: {PROBLEM_JSON}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n"
            f"X-Request-ID: {request_id}\r\n"
            "\r\n")
    return head.encode("latin-1") + body, request_id


class ProblemRefusals:
    """A gunicorn worker class mixin: :meth:`handle_error` (gunicorn's base Worker writes
    an HTML page there) answers problem details (see the module)."""

    def handle_error(self, req, client, addr, exc):
        status, code, detail = classify(exc)
        data, request_id = response(status, code, detail)
        ip = addr[0] if isinstance(addr, tuple) and addr else addr
        if code == "internal_error":
            self.log.exception("Error handling request (request_id %s)", request_id)
        else:
            self.log.warning("Invalid request from ip=%s: %s %s (request_id %s): %s",
                             ip, status, code, request_id, exc)
        try:
            client.sendall(data)
        except Exception:  # the client is gone: nothing to tell it
            self.log.debug("Failed to send error message.")


class ProblemRefusalHandler:
    """A gevent WSGI handler mixin (:class:`gevent.pywsgi.WSGIHandler`) answering problem
    details where it would answer an empty 400 or 414, or a text/plain 400 or 500; and holds
    the request's head to gunicorn's limits (gevent's own are looser)."""

    def handle_one_request(self):
        result = super().handle_one_request()
        if isinstance(result, tuple) and PROBLEM_MARK not in result[1]:
            # gevent's own answer: an empty 414 (a request line over 8 KiB) or 400.
            if str(result[0]).startswith("414"):
                return self._refusal(414, "uri_too_long", _TOO_LONG, None)
            return self._refusal(400, "malformed_request", _BAD, None)
        return result

    def read_request(self, raw_requestline):
        if len(raw_requestline.rstrip("\r\n")) > LIMIT_REQUEST_LINE:
            raise RequestLineTooLong(f"request line over {LIMIT_REQUEST_LINE} bytes")
        return super().read_request(raw_requestline)

    def MessageClass(self, *args):  # gevent's name
        headers = super().MessageClass(*args)
        if headers.status == "Line too long":
            raise HeaderFieldsTooLarge(headers.status)
        for name, value in headers.items():
            if len(name) + len(value) + 4 > LIMIT_REQUEST_FIELD_SIZE:  # ": " and CRLF
                raise HeaderFieldsTooLarge(f"header field over {LIMIT_REQUEST_FIELD_SIZE} bytes")
        return headers

    def _handle_client_error(self, ex):
        return self._refusal(*classify_gevent(ex), ex)

    def _refusal(self, status: int, code: str, detail: str, ex: BaseException | None):
        data, request_id = response(status, code, detail)
        self.log_error("Invalid request (from %s): %s %s (request_id %s): %s",
                       self.client_address, status, code, request_id,
                       "" if ex is None else str(ex) or type(ex).__name__)
        return str(status), data

    def _send_error_response_if_possible(self, error_code):
        # A 400 once the app reads a malformed body (bad chunked framing), or a 500 (a bug);
        # as gevent's, only if nothing of the answer was sent yet.
        if self.response_length:
            self.close_connection = True
            return
        status, code, detail = ((400, "malformed_request", _CHUNKED) if error_code == 400
                                else _INTERNAL)
        from service.api.errors import PROBLEM_JSON, problem_body

        body = problem_body(status, code, detail)
        try:
            self.start_response(f"{status} {HTTPStatus(status).phrase}",
                                [("Content-Type", PROBLEM_JSON), ("Connection", "close"),
                                 ("Content-Length", str(len(body))),
                                 ("X-Request-ID", uuid.uuid4().hex)])
            self.write(body)
        except OSError:
            self.close_connection = True
