"""schemathesis against the live WSGI app: generated requests for every documented
operation (``x-status: planned`` ones skipped), each answer checked for no server
error, a documented status, a documented content type, the documented body schema and the
documented headers, that a request breaking the spec is refused (negative data), that a
missing required header is refused, that an undocumented method is refused and that a 405
names the allowed methods.  Left out: ``positive_data_acceptance`` (a schema-valid move is
still refused by the rules of the game, 422), and the checks that send follow-up requests
of their own over the network (``ignored_auth``, ``use_after_free``,
``ensure_resource_availability``), which the in-process app cannot answer; tests/api
checks auth on every write and the lifecycle of a deleted game instead.

A random game id or token only ever meets 404 or 403, so most cases are sent to a real
game: before each case a fresh game of The Clock, deal 42, is created, its id replaces
the generated one and its player token the generated bearer token (one case in four keeps
what was generated).  The spec's own examples are sent first (the card move of the
examples is legal in that deal), then generated cases, then cases that break the spec on
purpose (negative mode: the answers to those must match it too).  Every request goes through
:class:`tests.contract.ValidatingClient`, so openapi-core checks each answer as well.
The number of generated cases per operation is bounded (``SCHEMATHESIS_EXAMPLES``,
default 50) so that the whole module stays well under a minute.
"""

from __future__ import annotations

import os

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    missing_required_header,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from service.app import create_app
from tests.contract import SPEC_PATH, ValidatingClient, is_planned, spec

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "50"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, response_headers_conformance,
          negative_data_rejection, missing_required_header,
          unsupported_method, allow_header_conformance]

SCHEMA = schemathesis.openapi.from_path(SPEC_PATH)
OPERATIONS = [(path, method) for path, item in spec()["paths"].items()
              for method, operation in item.items()
              if method in ("get", "post", "delete") and not is_planned(operation)]


@pytest.fixture(scope="module")
def app(redis_server):
    app = create_app({"TESTING": True, "REDIS_URL": redis_server.url,
                      "RATELIMIT_ENABLED": False})
    app.test_client_class = ValidatingClient
    yield app
    app.extensions["game_store"].close()


def _new_game(client) -> tuple[str, str]:
    response = client.post("/v1/games", json={"variant": "clock", "seed": 42})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json["game"]["id"], response.json["player_token"]


def _send(app, case, real: bool, secured: bool) -> None:
    """Point ``case`` at a fresh game (if ``real``), send it, check the answer."""
    if real:
        game_id, token = _new_game(app.test_client())
        if "id" in (case.path_parameters or {}):
            case.path_parameters["id"] = game_id
        if secured:
            case.headers = dict(case.headers or {}, Authorization=f"Bearer {token}")
    # The session is a ValidatingClient: openapi-core checks the answer too, and the
    # client releases what produced a body (an open file, for a static asset).
    response = case.call(app=app, session=app.test_client())
    case.validate_response(response, checks=CHECKS)


_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    verbosity=hypothesis.Verbosity.quiet,
)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("path", "method"), OPERATIONS,
                         ids=[f"{method.upper()} {path}" for path, method in OPERATIONS])
def test_operation_conforms(app, path, method):
    operation = SCHEMA[path][method.upper()]
    secured = bool(spec()["paths"][path][method].get("security"))

    for strategy in SCHEMA.get_strategies_from_examples(operation):
        @settings(_SETTINGS, max_examples=3)
        @given(case=strategy)
        def run_example(case):
            _send(app, case, real=True, secured=secured)

        run_example()

    @_SETTINGS
    @given(case=operation.as_strategy(), real=st.integers(0, 3).map(bool))
    def run_generated(case, real):
        _send(app, case, real, secured)

    run_generated()

    if _has_inputs(path, method):
        # Requests that break the spec on purpose: the answers must still match it.
        @settings(_SETTINGS, max_examples=max(1, EXAMPLES // 2))
        @given(case=operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
               real=st.integers(0, 3).map(bool))
        def run_negative(case, real):
            _send(app, case, real, secured)

        run_negative()


def _has_inputs(path: str, method: str) -> bool:
    """Whether an operation takes anything that can be made invalid (a header that takes
    any string, such as X-Request-ID, cannot be)."""
    operation = spec()["paths"][path][method]
    return bool(operation.get("requestBody")) or any(
        _resolve(parameter).get("schema") != {"type": "string"}
        for parameter in operation.get("parameters", ()))


def _resolve(node: dict) -> dict:
    """Follow a local ``$ref`` (``#/components/parameters/X-Request-ID``) to its target."""
    while "$ref" in node:
        target = spec()
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node
