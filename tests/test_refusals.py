"""What gunicorn's processes refuse before the app (service/runtime/refusals.py): both
groups' process classes answer problem details, every client error gunicorn knows is a
4xx/501 with a documented code (never a 500), and the limits the spec states are the
ones gunicorn runs with.  tests/e2e/test_hostile_http.py sends the requests themselves to
a real gunicorn of each group."""

from __future__ import annotations

import json
import logging
import socket
import ssl

import pytest
from gunicorn.config import Config
from gunicorn.http import errors as gunicorn_errors

from service.runtime import events_group, refusals, request_group
from service.runtime.events_process import (
    AttachingHandler,
    AttachingPyWSGIHandler,
    EventsProcess,
)
from service.runtime.request_process import RequestProcess
from tests.contract import schema_validator, spec


def _import(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(__import__(module, fromlist=[name]), name)


def test_both_groups_refuse_with_problem_details():
    for worker_class in (_import(request_group.worker_class),
                         _import(events_group.worker_class)):
        assert worker_class.handle_error is refusals.ProblemRefusals.handle_error
    assert {RequestProcess, EventsProcess} == {_import(request_group.worker_class),
                                               _import(events_group.worker_class)}
    # The events group's server is gevent's: its handlers answer what it refuses.
    assert EventsProcess.wsgi_handler is AttachingPyWSGIHandler
    for handler in (AttachingPyWSGIHandler, AttachingHandler):
        for name in ("handle_one_request", "_handle_client_error",
                     "_send_error_response_if_possible", "MessageClass"):
            assert getattr(handler, name) is getattr(refusals.ProblemRefusalHandler, name)


def _client_errors() -> list[type]:
    """Every error gunicorn's parser raises for a request (its ParseException kinds, less
    those about the app's own response headers), and an SSL error."""
    kinds, seen = [gunicorn_errors.ParseException], []
    while kinds:
        kind = kinds.pop()
        seen.append(kind)
        kinds.extend(kind.__subclasses__())
    response = (gunicorn_errors.InvalidResponseHeader, gunicorn_errors.InvalidResponseHeaderName)
    return [kind for kind in seen
            if kind is not gunicorn_errors.ParseException and kind not in response] \
        + [ssl.SSLError]


def test_no_client_error_is_a_500_and_every_code_is_documented():
    errors = _client_errors()
    assert gunicorn_errors.LimitRequestLine in errors
    assert len(errors) > 15
    documented = set(spec()["components"]["schemas"]["ProblemCode"]["enum"])
    for kind in errors:
        status, code, detail = refusals.classify(kind.__new__(kind))
        assert status != 500, kind
        assert code in documented, kind
        assert detail
    assert refusals.classify(RuntimeError("a bug"))[:2] == (500, "internal_error")
    assert refusals.classify(
        gunicorn_errors.InvalidResponseHeader.__new__(gunicorn_errors.InvalidResponseHeader)
    )[:2] == (500, "internal_error")


class _Process(refusals.ProblemRefusals):
    log = logging.getLogger("test.refusals")


@pytest.mark.parametrize(("error", "status", "code"), [
    (gunicorn_errors.LimitRequestLine(5000, 4094), 414, "uri_too_long"),
    (gunicorn_errors.LimitRequestHeaders("limit request headers fields"), 431,
     "header_fields_too_large"),
    (gunicorn_errors.InvalidRequestLine("GET <script>"), 400, "malformed_request"),
    (gunicorn_errors.InvalidHTTPVersion((9, 1)), 400, "malformed_request"),
    (gunicorn_errors.UnsupportedTransferCoding("x-zip"), 501, "unsupported_transfer_coding"),
])
def test_handle_error_writes_a_closing_problem(error, status, code):
    ours, theirs = socket.socketpair()
    with ours, theirs:
        _Process().handle_error(None, ours, ("127.0.0.1", 1), error)
        ours.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := theirs.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert lines[0].startswith(f"HTTP/1.1 {status} ")
    assert headers["Content-Type"] == "application/problem+json"
    assert headers["Connection"] == "close"
    assert int(headers["Content-Length"]) == len(body)
    problem = json.loads(body)
    schema_validator("/components/schemas/ProblemRefused").validate(problem)
    assert (problem["status"], problem["code"]) == (status, code)
    assert "script" not in problem["detail"]
    assert "x-zip" not in problem["detail"]


def test_the_limits_the_spec_states_are_gunicorns():
    config = Config()
    for module in (request_group, events_group):
        assert not [name for name in vars(module) if name.startswith("limit_request")]
    assert (config.limit_request_line, config.limit_request_field_size,
            config.limit_request_fields) == (4094, 8190, 100)
    text = spec()["info"]["description"] + \
        spec()["components"]["schemas"]["ProblemRefused"]["description"]
    for figure in ("4094 bytes", "8190 bytes", "100 header"):
        assert figure in text.replace("\n", " ")


def test_every_code_the_service_refuses_with_has_a_title_and_is_documented():
    """Every problem code raised in service/ (GameError, BadRequest, problem()): the
    daily deal's refusals (ranked_game, ranked_game_hidden, day_closed, attempt_taken...)
    as much as the games'."""
    import re
    from pathlib import Path

    from service.api.errors import TITLES

    raised = set()
    pattern = re.compile(r'(?:GameError|BadRequest|problem)\(\s*\d{3},\s*"([a-z_]+)"')
    for path in Path(refusals.__file__).resolve().parents[1].rglob("*.py"):
        raised |= set(pattern.findall(path.read_text()))
    daily = {"ranked_game", "ranked_game_hidden", "ranked_hint_refused",
             "ranked_analysis_refused", "day_closed", "day_not_open", "day_not_found",
             "attempt_taken", "account_too_new", "daily_deal_unavailable", "not_on_board"}
    assert daily <= raised
    documented = set(spec()["components"]["schemas"]["ProblemCode"]["enum"])
    assert raised - {"internal_error"} <= documented, sorted(raised - documented)
    assert raised - {"internal_error"} <= set(TITLES), sorted(raised - set(TITLES))
