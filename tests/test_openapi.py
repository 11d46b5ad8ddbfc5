"""openapi.yaml against itself, the engine, the service, and the contract tooling.

- the document is valid OpenAPI 3.1 (openapi-spec-validator), with no duplicate key;
- every route of the Flask app is documented and every documented operation that is not
  ``x-status: planned`` exists in the app (a planned one that exists must lose the mark);
- ``/v1/openapi.yaml`` serves the file byte for byte; ``/docs`` loads only local assets;
- the engine's rule codes, variant ids and pile ids are the spec's enums, and every
  problem code the service can send is in the spec;
- every example validates against its schema, and the Clock 42 examples are what the
  engine really deals and plays;
- :class:`tests.contract.ValidatingClient` itself catches what it must.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from flask import Flask, Response
from openapi_spec_validator import OpenAPIV31SpecValidator

from service.api.errors import TITLES
from service.app import close_app, create_app
from service.engine import RULE_CODES, IllegalMoveError, Move, get_variant, variants
from tests.contract import (
    SPEC_PATH,
    ContractError,
    ValidatingClient,
    is_planned,
    operations,
    schema_validator,
    spec,
    spec_bytes,
)

SCHEMAS = "/components/schemas"
PILE_ENUMS = {"clock": "ClockPileId", "salic-law": "SalicLawPileId",
              "four-corners": "FourCornersPileId"}


@pytest.fixture
def app(redis_url):
    app = create_app({"TESTING": True, "REDIS_URL": redis_url, "RATELIMIT_ENABLED": False})
    app.test_client_class = ValidatingClient
    yield app
    close_app(app)


@pytest.fixture
def client(app):
    return app.test_client()


def _schema(name: str) -> dict:
    return spec()["components"]["schemas"][name]


# --- the document -----------------------------------------------------------------------
def test_the_spec_is_valid_openapi_3_1():
    document = spec()  # refuses duplicate keys
    assert document["openapi"] == "3.1.0"
    assert document["servers"] == [{"url": "/"}]
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in OpenAPIV31SpecValidator(document).iter_errors()]
    assert errors == []


def test_every_operation_has_a_unique_id_and_documents_its_refusals():
    ids = [operation["operationId"] for _path, _method, operation in operations()]
    assert len(ids) == len(set(ids))
    for path, method, operation in operations():
        responses = operation["responses"]
        where = f"{method.upper()} {path}"
        if operation.get("security") == [{"bearerAuth": []}]:  # a game's token
            assert {"401", "403"} <= set(responses), where
        elif operation.get("security"):  # a player's token: invalid is 401 too
            assert "401" in set(responses), where
        if "{id}" in path:
            assert "404" in responses, where
        if "requestBody" in operation:
            assert {"400", "413", "415"} <= set(responses), where
        for status, response in responses.items():
            if "$ref" in response:
                response = spec()["components"]["responses"][response["$ref"].rsplit("/")[-1]]
            assert "X-Request-ID" in response.get("headers", {}), f"{where} {status}"
            if status.startswith(("4", "5")):
                assert set(response["content"]) == {"application/problem+json"}, \
                    f"{where} {status}"
            if status in ("429", "503"):
                assert "Retry-After" in response["headers"], f"{where} {status}"


def _rule_path(rule) -> str:
    return re.sub(r"<(?:[a-z]+:)?[a-z_]+>", "{}", rule.rule)


def _spec_path(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_every_route_of_the_app_is_documented_and_the_reverse(app):
    served = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            served.add((_rule_path(rule), method.lower()))
    documented = {(_spec_path(path), method): operation
                  for path, method, operation in operations()}
    assert sorted(served - set(documented)) == [], "routes missing from openapi.yaml"
    missing = sorted(key for key, operation in documented.items()
                     if key not in served and not is_planned(operation))
    assert missing == [], "documented operations the app does not serve"
    implemented = sorted(key for key, operation in documented.items()
                         if key in served and is_planned(operation))
    assert implemented == [], "implemented operations still marked x-status: planned"


def test_the_app_serves_the_file_byte_for_byte(client):
    response = client.get("/v1/openapi.yaml")
    assert response.status_code == 200
    assert response.mimetype == "application/yaml"
    assert response.data == SPEC_PATH.read_bytes() == spec_bytes()
    assert "Accept" in response.headers["Vary"]
    as_text = client.get("/v1/openapi.yaml", headers={"Accept": "text/yaml"})
    assert as_text.mimetype == "text/yaml"
    assert as_text.data == response.data


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name in ("src", "href"):
            if attributes.get(name):
                self.urls.append(attributes[name])


def test_docs_load_only_local_assets(client):
    page = client.get("/docs")
    assert page.status_code == 200
    assert page.mimetype == "text/html"
    links = _Links()
    links.feed(page.get_data(as_text=True))
    assert any(url.endswith(".js") for url in links.urls)
    assert any(url.endswith(".css") for url in links.urls)
    for url in links.urls:
        assert not url.startswith(("http://", "https://", "//")), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.data, url
        if url.endswith(".js"):
            assert asset.mimetype == "text/javascript", url
    script = client.get("/docs/docs-init.js").get_data(as_text=True)
    assert '"/v1/openapi.yaml"' in script
    assert "validatorUrl: null" in script  # else Swagger UI fetches a badge from swagger.io
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]


# --- the spec and the engine ---------------------------------------------------------
def test_every_rule_code_is_a_422_code():
    assert _schema("RuleCode")["enum"] == list(RULE_CODES)
    assert set(RULE_CODES) <= set(_schema("ProblemCode")["enum"])
    validator = schema_validator(f"{SCHEMAS}/Problem422")
    for code in RULE_CODES:
        problem = {"type": f"urn:patience:problem:{code}", "title": "Illegal move",
                   "status": 422, "detail": "refused", "code": code}
        assert validator.is_valid(problem), code
    assert not validator.is_valid(dict(problem, code="wrong_token"))


def test_every_problem_code_of_the_service_is_documented():
    documented = set(_schema("ProblemCode")["enum"])
    assert set(TITLES) - {"internal_error"} <= documented  # a 500 is never documented
    assert len(documented) == len(_schema("ProblemCode")["enum"])


def test_variant_ids_and_pile_ids_are_the_engines():
    assert sorted(_schema("VariantId")["enum"]) == sorted(variant.id for variant in variants())
    assert set(PILE_ENUMS) == {variant.id for variant in variants()}
    for variant in variants():
        assert _schema(PILE_ENUMS[variant.id])["enum"] == list(variant.pile_ids), variant.id
        kinds = set(_schema("PileKind")["enum"])
        assert set(variant.kinds) <= kinds
        assert set(variant.move_types) <= set(_schema("MoveType")["enum"])
    validator = schema_validator(f"{SCHEMAS}/Variant")
    for variant in variants():
        errors = [error.message for error in validator.iter_errors(variant.describe())]
        assert errors == [], variant.id
    # One enumeration of every variant's ids, so that a generated client parses a pile id
    # as one type whatever the variant (a union of per-variant enums parses as the first).
    every_id = list(dict.fromkeys(pile for v in variants() for pile in v.pile_ids))
    assert _schema("PileId")["enum"] == every_id


def _examples():
    """``(where, schema pointer, value)`` of every example of a media type or parameter."""
    def pointer(*parts):
        return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)

    found = []
    for path, method, operation in operations():
        base = ("paths", path, method)
        body = operation.get("requestBody", {}).get("content", {})
        for media, content in body.items():
            found += _media_examples(content, pointer(*base, "requestBody", "content", media,
                                                       "schema"), f"{method} {path} request")
        for status, response in operation["responses"].items():
            for media, content in response.get("content", {}).items():
                found += _media_examples(
                    content, pointer(*base, "responses", status, "content", media, "schema"),
                    f"{method} {path} {status}")
    components = spec()["components"]
    for name, response in components["responses"].items():
        for media, content in response.get("content", {}).items():
            found += _media_examples(
                content, pointer("components", "responses", name, "content", media, "schema"),
                f"response {name}")
    for name, parameter in components["parameters"].items():
        if "example" in parameter:
            found.append((f"parameter {name}", pointer("components", "parameters", name,
                                                       "schema"), parameter["example"]))
    for name, header in components["headers"].items():
        if "example" in header and header["schema"].get("type") == "string":
            found.append((f"header {name}", pointer("components", "headers", name, "schema"),
                          header["example"]))
    for name, schema in components["schemas"].items():
        if "example" in schema:
            found.append((f"schema {name}", pointer("components", "schemas", name),
                          schema["example"]))
        for example in schema.get("examples", []):
            found.append((f"schema {name}", pointer("components", "schemas", name), example))
    return found


def _media_examples(content, schema_pointer, where):
    if "schema" not in content:
        return []
    found = []
    if "example" in content:
        found.append((where, schema_pointer, content["example"]))
    for name, example in content.get("examples", {}).items():
        found.append((f"{where} ({name})", schema_pointer, example["value"]))
    return found


def test_every_example_matches_its_schema():
    examples = _examples()
    assert len(examples) > 30
    failures = []
    for where, pointer, value in examples:
        validator = schema_validator(pointer)
        failures += [f"{where}: at {e.json_path}: {e.message[:200]}"
                     for e in validator.iter_errors(value)]
    assert failures == []


def _example(path: str, method: str, status: str, name: str):
    content = spec()["paths"][path][method]["responses"][status]["content"]
    return content["application/json"]["examples"][name]["value"]


def test_the_clock_42_examples_are_real():
    clock = get_variant("clock")
    state = clock.deal(42)
    created = _example("/v1/games", "post", "201", "clock-42")
    game = created["game"]
    assert created["game"] == _example("/v1/games/{id}", "get", "200", "clock-42")
    assert game["seed"] == 42
    assert game["version"] == 0
    assert [pile["id"] for pile in game["piles"]] == list(clock.pile_ids)
    for pile, cards, kind in zip(game["piles"], state.piles, clock.kinds, strict=True):
        assert pile["count"] == len(cards)
        assert pile["kind"] == kind
        assert pile["cards"] == ([] if kind == "stock" else [str(card) for card in cards])

    listed = _example("/v1/games/{id}/moves", "get", "200", "clock-42")["moves"]
    expected = []
    for move in state.legal_moves():
        entry = move.to_dict()
        if state.card_of(move) is not None:
            entry["card"] = str(state.card_of(move))
        expected.append(entry)
    assert listed == expected

    request = spec()["paths"]["/v1/games/{id}/moves"]["post"]["requestBody"]["content"]
    move = Move.from_dict(request["application/json"]["examples"]["card-move"]["value"])
    after, step = state.apply(move)
    result = _example("/v1/games/{id}/moves", "post", "200", "card-move")
    assert result["events"] == [event.to_dict() for event in step.events]
    assert [pile["cards"] for pile in result["game"]["piles"] if pile["id"] != "stock"] == \
        [[str(c) for c in cards] for spec_, cards in zip(clock.layout, after.piles, strict=True)
         if spec_.id != "stock"]
    history = _example("/v1/games/{id}/history", "get", "200", "one-move")
    assert history["moves"] == [{"version": 1, "move": move.to_dict(),
                                 "events": result["events"]}]
    undone = _example("/v1/games/{id}/undo", "post", "200", "undo")
    assert undone["game"]["piles"] == game["piles"]
    assert undone["events"] == [{"card": e["card"], "from": e["to"], "to": e["from"]}
                                for e in reversed(result["events"])]

    problems = spec()["components"]["responses"]["IllegalMove"]["content"]
    for example in problems["application/problem+json"]["examples"].values():
        value = example["value"]
        refused = {"wrong_suit": Move.parse("packet-1>foundation-1"),
                   "no_gaps": Move("refill")}[value["code"]]
        with pytest.raises(IllegalMoveError) as raised:
            state.apply(refused)
        assert raised.value.code == value["code"]
        assert raised.value.message == value["detail"]
        assert value["title"].lower() == RULE_CODES[value["code"]].lower()


def test_the_variants_example_is_what_the_engine_describes():
    example = _example("/v1/variants", "get", "200", "variants")
    assert example == {"variants": [variant.describe() for variant in variants()]}


# --- the contract tooling itself -----------------------------------------------------
def _fake_app() -> Flask:
    """An app that answers documented paths wrongly, to see the client refuse it."""
    fake = Flask("fake")

    @fake.get("/v1/variants")
    def wrong_shape():
        return {"variants": [{"id": "clock"}]}

    @fake.get("/healthz")
    def no_request_id():
        return {"status": "ok"}

    @fake.get("/readyz")
    def undocumented_status():
        response = Response('{"status": "ready"}', 202, mimetype="application/json")
        response.headers["X-Request-ID"] = "r1"
        return response

    @fake.get("/v1/games/<game_id>")
    def problem_mismatch(game_id):
        body = ('{"type": "urn:patience:problem:not_found", "title": "t", "status": 404, '
                '"detail": "d", "code": "game_not_found"}')
        response = Response(body, 404, mimetype="application/problem+json")
        response.headers["X-Request-ID"] = "r2"
        return response

    @fake.get("/v1/games/<game_id>/history")
    def wrong_headers(game_id):
        body = ('{"type": "urn:patience:problem:rate_limited", "title": "t", "status": 429, '
                '"detail": "d", "code": "rate_limited"}')
        response = Response(body, 429, mimetype="application/problem+json")
        response.headers.update({"X-Request-ID": "r4", "Retry-After": "soon",
                                 "RateLimit-Remaining": "-1"})
        return response

    @fake.post("/v1/games")
    def good_answer_to_a_bad_request():
        body = ('{"type": "urn:patience:problem:invalid_request", "title": "t", '
                '"status": 400, "detail": "d", "code": "invalid_request", '
                '"errors": {"colour": ["Unknown field."]}}')
        response = Response(body, 400, mimetype="application/problem+json")
        response.headers["X-Request-ID"] = "r3"
        return response

    fake.test_client_class = ValidatingClient
    return fake


@pytest.mark.parametrize(("path", "message"), [
    ("/v1/variants", 'at $.variants[0]: "name" is a required property'),
    ("/healthz", "X-Request-ID"),
    ("/readyz", "status 202 is not documented"),
    ("/v1/games/abc", "problem type 'urn:patience:problem:not_found' is not"),
    ("/v1/games/abc/history", "header Retry-After: 'soon' is not an integer"),
    ("/v1/games/abc/history", "header RateLimit-Remaining at $: -1 is less than the minimum of 0"),
    ("/no/such/path", "expected application/problem+json"),
])
def test_the_validating_client_refuses_a_wrong_answer(path, message):
    client = _fake_app().test_client()
    with pytest.raises(ContractError, match=re.escape(message)):
        client.get(path)
    assert client.get(path, contract=False).status_code in (200, 202, 404, 429)


def test_the_validating_client_checks_the_answer_to_a_bad_request_only():
    client = _fake_app().test_client()
    response = client.post("/v1/games", json={"variant": "clock", "colour": "red"})
    assert response.status_code == 400
    assert response.contract_request_errors  # recorded, not raised
    assert "colour" in " ".join(response.contract_request_errors)
