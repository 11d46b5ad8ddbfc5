"""schemathesis 4 against the live WSGI app, in process, with every one of its checks but
``max_response_time``.

**The checks.**  Each answer is checked for no server error, a documented status, a
documented content type, the documented body schema and the documented headers; that a
request breaking the spec is refused (``negative_data_rejection``) and one that matches it
accepted (``positive_data_acceptance``, see :data:`ACCEPTED`); that a missing required
header is refused, that an undocumented method is refused and that a 405 names the allowed
methods; that a write refuses a request without its token and one with a wrong token
(``ignored_auth``, which sends both of its own after every successful write); that a
deleted game is gone for every later read (``use_after_free``) and that a game just created
is there (``ensure_resource_availability``); ``object_level_authorization`` runs too, with
nothing to compare: it replays one identity's reads as the other identities of an
``[auth.wfc]`` configuration, and this API has no accounts (one token per game) and public
reads by contract (spectators); a write with another game's token is refused 403, which
tests/api checks.  Left out: ``max_response_time``, a wall-clock limit, which on
a machine shared with other jobs fails at random and would say nothing of the service (the
benchmark in bench/ measures speed); and ``ignored_auth`` on ``DELETE /v1/games/{id}``
only (:data:`NOT_PROBED`): its probes come after the DELETE succeeded, when the only right
answer to any token is 404 (tests/api checks 401 and 403 on a DELETE).

**Stateless** (:func:`test_operation_conforms`).  A random game id or token only ever meets
404 or 403, so most cases are sent to a real game: before each case a fresh game of The
Clock, deal 42, is created, its id replaces the generated one and its player token the
generated bearer token (one case in four keeps what was generated; a case that breaks its
path or headers on purpose keeps them).  The spec's own examples are sent first (the card
move of the examples is legal in that deal), then generated cases, then cases that break
the spec on purpose (negative mode: the answers to those must match it too).  Every request
goes through :class:`tests.contract.ValidatingClient`, so the contract checks each answer
as well.  The number of generated cases per operation is bounded (``SCHEMATHESIS_EXAMPLES``,
default 50).

**Stateful** (:func:`test_stateful`).  ``schema.as_state_machine()`` follows the ``links``
of openapi.yaml (create a game, then read, play, undo, autoplay, follow and delete it, and
read it after deleting it): scenarios of up to 10 steps, each starting with
``POST /v1/games``, ``SCHEMATHESIS_SCENARIOS`` of them (default 40).  The bearer token of a
game the scenario created is applied to every write to it by an auth provider
(:class:`PlayerToken`), which is what lets ``ignored_auth`` probe.  To be reproducible, the
run is derandomized, Redis is emptied before each scenario and the deal the server draws
when the client names none is fixed (:class:`_FixedDeal`): Hypothesis replays a scenario
and must get the same answers.
"""

from __future__ import annotations

import os
import secrets
from collections import Counter

import hypothesis
import pytest
import redis
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS
from schemathesis.config import SchemathesisConfig
from schemathesis.core.parameters import ParameterLocation

import service.game.commands
from service.app import close_app, create_app
from service.engine import variants
from service.storage import keys
from tests.contract import SPEC_PATH, ValidatingClient, is_planned, spec

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "50"))
SCENARIOS = int(os.environ.get("SCHEMATHESIS_SCENARIOS", "40"))

# What a request that matches the spec may be answered, per operation: success, and the
# refusals that depend on the state of the server rather than on the request: 304 (the
# client's copy is current), 401/403 (token), 404 (no such game or file), 409 (undo
# refused by the rules, write conflict), 412 (If-Match), 422 (a rule of the game, or an
# Idempotency-Key used before with another body).  Never 400, 413, 415 (the request's
# shape), 429 (rate limits are off here) or 503 (Redis is up).
ACCEPTED = {
    "listVariants": [200],
    "createGame": [201, 422],
    "getGame": [200, 304, 404],
    "deleteGame": [204, 401, 403, 404, 409, 412, 422],
    "listMoves": [200, 304, 404],
    "playMove": [200, 401, 403, 404, 409, 412, 422],
    "undoMove": [200, 401, 403, 404, 409, 412, 422],
    "getHistory": [200, 304, 404],
    "followGame": [200, 204, 304, 404],
    "getHint": [200, 304, 404],
    "getAnalysis": [200, 202, 404, 409],
    "autoplay": [200, 401, 403, 404, 409, 412, 422],
    "getStats": [200],
    "healthz": [200],
    "readyz": [200],
    "metrics": [200],
    "getOpenapi": [200],
    "docs": [200],
    "docsAsset": [200, 304, 404],
    "webClient": [200, 304],
    "webClientAsset": [200, 304, 404],
    # A display name is checked beyond what a JSON Schema says (Unicode categories, its
    # length once normalised and trimmed): 400 for a name that matches the schema.
    "createPlayer": [201, 400],
    # The player operations: 401 for a generated bearer token (no player's).
    "getPlayer": [200, 401],
    "deletePlayer": [204, 401],
    "rotatePlayerToken": [200, 401],
    "revokePlayerToken": [204, 401],
    "listPlayerGames": [200, 401],
    "claimGame": [200, 401, 403, 404, 409, 422],
    "getPlayerStats": [200, 401],
    "exportPlayer": [200, 401],
    # The daily deal: a generated day id is mostly no day (404), over or not begun (409);
    # a generated variant no variant (404).  Every player here is made during the test and
    # the app's DAILY_ACCOUNT_RULE is before-day: no ranked attempt is ever taken (403
    # account_too_new); a 201, or a 503 of a day without a deal, is the rule let through
    # (:func:`_explain_attempt`).
    "getDaily": [200],
    "getDailyDay": [200, 404, 409],
    "startDailyAttempt": [401, 403, 404, 409],
    "getDailyBoard": [200, 404],
    "getDailyBoardAround": [200, 404],
    "getDailyBoardEvents": [200, 404],
    "getWeeklyBoard": [200, 404],
    "getWeeklyBoardAround": [200, 404],
    "getStreaksBoard": [200, 404],
    "getStreaksBoardAround": [200, 404],
}
# ignored_auth probes a write without a token and with a wrong one after the write
# succeeded: after a DELETE the game is gone and the wrong token meets 404, as it must (no
# token can be checked against a game that no longer exists).
NOT_PROBED = {"deleteGame"}
OPERATION_CONFIG = [
    {"include-operation-id": operation_id,
     "checks": {"positive_data_acceptance": {"expected-statuses": [str(s) for s in statuses]},
                "ignored_auth": {"enabled": operation_id not in NOT_PROBED}}}
    for operation_id, statuses in ACCEPTED.items()]
SCHEMA = schemathesis.openapi.from_path(
    SPEC_PATH, config=SchemathesisConfig.from_dict({"operations": OPERATION_CONFIG}))
# Stateful: positive cases only (the stateless test sends the negative ones), and only the
# links the spec documents (no inferred ones).
STATEFUL_SCHEMA = schemathesis.openapi.from_path(SPEC_PATH, config=SchemathesisConfig.from_dict({
    "operations": OPERATION_CONFIG,
    "phases": {"stateful": {"generation": {"mode": "positive"},
                            "inference": {"algorithms": []}}}}))
OPERATIONS = [(path, method) for path, item in spec()["paths"].items()
              for method, operation in item.items()
              if method in ("get", "post", "delete") and not is_planned(operation)]
ALL_CHECKS = {"not_a_server_error", "status_code_conformance", "content_type_conformance",
              "response_headers_conformance", "response_schema_conformance",
              "negative_data_rejection", "positive_data_acceptance", "missing_required_header",
              "unsupported_method", "allow_header_conformance", "use_after_free",
              "ensure_resource_availability", "ignored_auth", "object_level_authorization"}


@pytest.fixture(scope="module")
def app(redis_server):
    # No solver search in a request (no worker runs here): a winnable creation with an
    # empty pool answers 422 no_winnable_deal and an analysis 202 at once, the same every
    # time (tests/api/test_winnable.py and test_analysis.py cover the rest).
    # The account rule that the daily attempts' expected answers depend on is given, not
    # read from the environment.
    app = create_app({"TESTING": True, "REDIS_URL": redis_server.url,
                      "RATELIMIT_ENABLED": False, "WINNABLE_SEARCH_SECONDS": 0,
                      "ANALYSIS_INLINE_SECONDS": 0, "DAILY_ACCOUNT_RULE": "before-day"})
    app.test_client_class = ValidatingClient
    # The checks that send requests of their own (ignored_auth) send them to the app too.
    SCHEMA.app = STATEFUL_SCHEMA.app = app
    yield app
    SCHEMA.app = STATEFUL_SCHEMA.app = None
    close_app(app)


def test_every_check_runs_but_the_wall_clock():
    """The checks schemathesis has are the ones this module knows, and every one is on for
    every operation, but max_response_time everywhere and ignored_auth on NOT_PROBED."""
    registered = {check.__name__ for check in CHECKS.get_all()}
    assert registered == ALL_CHECKS
    assert set(ACCEPTED) == {operation["operationId"] for _, _, operation in _operations()}
    for schema in (SCHEMA, STATEFUL_SCHEMA):
        for path, method, operation in _operations():
            api_operation = schema[path][method.upper()]
            for phase in ("examples", "fuzzing", "stateful"):
                config = schema.config.checks_config_for(operation=api_operation, phase=phase)
                off = {name for name in ALL_CHECKS if not config.get_by_name(name=name).enabled}
                assert off == ({"ignored_auth"} if operation["operationId"] in NOT_PROBED
                               else set()), (path, method, phase)
                assert not config.max_response_time.enabled
                accepted = config.positive_data_acceptance.expected_statuses
                assert accepted == [str(s) for s in ACCEPTED[operation["operationId"]]]
                # Only statuses the operation documents.
                assert set(accepted) <= set(operation["responses"]), (path, method, accepted)


def _operations():
    for path, method in OPERATIONS:
        yield path, method, spec()["paths"][path][method]


def _new_game(client) -> tuple[str, str]:
    response = client.post("/v1/games", json={"variant": "clock", "seed": 42})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json["game"]["id"], response.json["player_token"]


def _new_player(client) -> str:
    response = client.post("/v1/players", json={"name": "Schemathesis"})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json["player_token"]


def _send(app, case, real: bool, secured: str | None) -> None:
    """Point ``case`` at a fresh game (if ``real``; a player operation: a fresh
    player's token), send it, check the answer."""
    meta = case.meta
    explicit = None
    if real:
        game_id, token = _new_game(app.test_client())
        if secured == "playerAuth":
            token = _new_player(app.test_client())
        if "id" in (case.path_parameters or {}) and not (
                meta is not None and meta.is_negative_at(ParameterLocation.PATH)):
            case.path_parameters["id"] = game_id
        if secured and not (meta is not None and meta.is_negative_at(ParameterLocation.HEADER)):
            explicit = {"Authorization": f"Bearer {token}"}
            case.headers = dict(case.headers or {}, **explicit)
    # The session is a ValidatingClient: the contract checks the answer too, and the
    # client releases what produced a body (an open file, for a static asset).
    response = case.call(app=app, session=app.test_client())
    if case.operation.definition.raw["operationId"] == "startDailyAttempt":
        _explain_attempt(app, case, response)
    # Every check enabled in the config; a token given as `headers` is one the test chose
    # (not generated), so ignored_auth sends its probes without it and with a wrong one.
    case.validate_response(response, headers=explicit, transport_kwargs={"app": app})


def _explain_attempt(app, case, response) -> None:
    """A daily attempt that got past the account rule (201, or 503 for want of the day's
    deal) fails here, saying with which player, account and rule it did."""
    if response.status_code not in (201, 503):
        return
    bearer = (case.headers or {}).get("Authorization", "").removeprefix("Bearer ")
    player = app.services.players.identify(bearer).player
    daily = app.services.daily
    profile = (daily.players.profile(player) if player else None) or {}
    account = {name: profile.get(name) for name in (keys.PLAYER_CREATED, keys.PLAYER_KIND)}
    today = daily.today()
    pytest.fail(
        f"a daily attempt got past the account rule: {response.status_code} "
        f"{response.text[:200]}; the rule "
        f"{daily.settings.account_rule!r}, the player {player!r}, its account {account}, "
        f"today {daily.calendar.day_id(today)!r} (from {daily.calendar.start_ms(today)} ms), "
        f"the path parameters {case.path_parameters}")


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
    security = spec()["paths"][path][method].get("security")
    secured = next(iter(security[0])) if security else None

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


# --- stateful ---------------------------------------------------------------------------
CREATE_ROOT = "RANDOM__POST_v1_games"  # the rule that starts a scenario with POST /v1/games
TOKENS: dict[str, str] = {}  # game id -> player token, of the games the scenario created


@STATEFUL_SCHEMA.auth(refresh_interval=None)
class PlayerToken:
    """The bearer token of the game a case is sent to, if the scenario created that game."""

    def get(self, case, _ctx):
        return TOKENS.get((case.path_parameters or {}).get("id"))

    def set(self, case, token, _ctx):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}


class _FixedDeal:
    """``secrets`` for service.game.commands, but the deal the server draws is always 42 (ids,
    tokens and salts stay random: nothing a scenario does depends on their values)."""

    def __getattr__(self, name):
        return getattr(secrets, name)

    @staticmethod
    def randbits(_bits: int) -> int:
        return 42


@pytest.mark.timeout(180)
def test_stateful(app, redis_server, monkeypatch):
    monkeypatch.setattr(service.game.commands, "secrets", _FixedDeal())
    redis_db = redis.Redis.from_url(redis_server.url)
    machine = STATEFUL_SCHEMA.as_state_machine()
    # Scenarios start by creating a game; a write to a random id meets 401 or 404, which
    # the stateless test checks at length.
    assert CREATE_ROOT in machine.root_rules, sorted(machine.root_rules)
    others = {name: None for name in machine.root_rules if name != CREATE_ROOT}
    seen: Counter = Counter()  # (operationId, status) of every step, and what they reached
    deleted: set[str] = set()

    class Workflow(machine):
        locals().update(others)
        root_rules = frozenset({CREATE_ROOT})

        def setup(self):
            redis_db.flushall()
            # A winnable creation deals the pool's seed, the fixed deal: a scenario's
            # root create always succeeds, and a replayed scenario takes the same path.
            for variant in variants():
                redis_db.sadd(keys.pool(variant.id), 42)
            TOKENS.clear()
            deleted.clear()

        def get_call_kwargs(self, case):
            return {"app": app, "session": app.test_client()}

        def after_call(self, response, case):
            super().after_call(response, case)
            operation_id = case.operation.definition.raw["operationId"]
            game_id = (case.path_parameters or {}).get("id")
            status = response.status_code
            seen[operation_id, status] += 1
            if operation_id == "createGame" and status == 201:
                body = response.json()
                TOKENS[body["game"]["id"]] = body["player_token"]
            elif operation_id == "deleteGame" and status == 204:
                deleted.add(game_id)
            elif game_id in deleted and case.method == "GET":
                seen["read after delete"] += 1
            if case.method != "GET" and game_id in TOKENS:
                seen["sent with its token", operation_id] += 1
                if 200 <= status < 300:
                    seen["write with its token", operation_id] += 1

    try:
        Workflow.run(settings=settings(
            max_examples=SCENARIOS, stateful_step_count=10, deadline=None, database=None,
            derandomize=True, suppress_health_check=list(HealthCheck),
            phases=[Phase.generate]))
    finally:
        redis_db.close()
    # The links were followed far enough for the stateful checks to have something to
    # check: writes that ignored_auth probed, reads of a deleted game for use_after_free,
    # reads of a new game for ensure_resource_availability.  A generated move is rarely
    # legal (a few in a run, none in some orders of the suite), so a move only has to be
    # sent with its token here: the stateless test probes accepted moves (the spec's
    # examples are legal in its deal).
    for reached in [("sent with its token", "playMove"), ("write with its token", "autoplay"),
                    ("write with its token", "deleteGame"), "read after delete",
                    ("getGame", 200), ("getGame", 304)]:
        assert seen[reached], (reached, seen)
