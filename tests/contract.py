"""The contract: every response the tests receive is checked against ``openapi.yaml``.

:class:`ValidatingClient` is a Flask test client whose every request/response pair is
validated against the spec: a response whose status is not documented for its
operation, whose body does not match the documented schema, whose content type is not a
documented one, or that lacks a documented required header (``ETag``, ``Location``,
``Retry-After``, ``X-Request-ID``) fails the test with an ``AssertionError`` that says what
and where.  The response's body and headers are checked with jsonschema-rs against the
spec's schemas, each compiled once (the suite checks tens of thousands of responses: a
few microseconds each, where a Python validator takes milliseconds).  The request is
validated too, with openapi-core, separately, and its errors are only recorded
(``response.contract_request_errors``): tests send invalid requests on purpose, and the
answers to those must match the spec all the same.

Per call, ``contract="status"`` checks only the status and the content type (for a body
that is not JSON and whose exact bytes do not matter), ``contract=False`` nothing.

Beyond the schemas, every problem body must have ``type == "urn:patience:problem:<code>"``
and ``status`` equal to the response status; a path that the spec does not know must be
answered 404 ``not_found``, a documented path with an undocumented method 405
``method_not_allowed`` (both problem details); an operation marked ``x-status: planned``
may be answered 404 ``not_found`` until it is implemented.
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jsonschema_rs
import yaml
from flask.testing import FlaskClient
from jsonschema.exceptions import ValidationError as JsonSchemaError
from openapi_core import Config, OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest
from openapi_core.deserializing.media_types.util import json_loads, plain_loads
from openapi_schema_validator import OAS31Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from werkzeug.test import TestResponse
from werkzeug.wrappers import Request

SPEC_PATH = Path(__file__).resolve().parent.parent / "openapi.yaml"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
PROBLEM_JSON = "application/problem+json"
_SPEC_URI = "urn:patience:openapi"


# --- the spec -----------------------------------------------------------------------------
class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses a mapping with the same key twice (PyYAML keeps the
    last one silently, which hides a mistake in a hand-written spec)."""


def _mapping_without_duplicates(loader, node, deep=False):
    keys = set()
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in keys:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        keys.add(key)
    return loader.construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


@functools.cache
def spec_bytes() -> bytes:
    return SPEC_PATH.read_bytes()


@functools.cache
def spec() -> dict:
    """``openapi.yaml`` as a dict (a duplicate key is an error)."""
    return yaml.load(spec_bytes(), Loader=_UniqueKeyLoader)


def _yaml_loads(value: bytes, **_parameters: str) -> Any:
    return yaml.safe_load(value)


@functools.cache
def openapi() -> OpenAPI:
    config = Config(extra_media_type_deserializers={
        PROBLEM_JSON: json_loads,
        "application/yaml": _yaml_loads,
        "text/yaml": plain_loads,
        "text/javascript": plain_loads,
        "text/css": plain_loads,
        "text/event-stream": plain_loads,
        "application/x-ndjson": plain_loads,
    })
    return OpenAPI.from_dict(spec(), config=config)


@functools.cache
def _registry() -> Registry:
    return Registry().with_resource(
        _SPEC_URI, Resource.from_contents(spec(), default_specification=DRAFT202012))


def schema_validator(pointer: str) -> OAS31Validator:
    """A validator of the schema at JSON pointer ``pointer`` of the spec, e.g.
    ``/components/schemas/Game``, with every ``$ref`` resolved inside the spec."""
    return OAS31Validator({"$ref": f"{_SPEC_URI}#{pointer}"}, registry=_registry())


@functools.cache
def _compiled_registry() -> jsonschema_rs.Registry:
    return jsonschema_rs.Registry([(_SPEC_URI, spec())], draft=jsonschema_rs.Draft202012)


@functools.cache
def compiled_validator(pointer: str) -> jsonschema_rs.Draft202012Validator:
    """The schema at ``pointer``, as :func:`schema_validator`, compiled once by
    jsonschema-rs (JSON Schema 2020-12, the dialect of OpenAPI 3.1; formats checked)."""
    return jsonschema_rs.Draft202012Validator(
        {"$ref": f"{_SPEC_URI}#{quote(pointer, safe='/~')}"}, registry=_compiled_registry(),
        validate_formats=True)


def operations(include_planned: bool = True) -> Iterator[tuple[str, str, dict]]:
    """``(path, method, operation)`` of every documented operation."""
    for path, item in spec()["paths"].items():
        for method in HTTP_METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            if include_planned or not is_planned(operation):
                yield path, method, operation


def is_planned(operation: dict) -> bool:
    return operation.get("x-status") == "planned"


@functools.cache
def _path_patterns() -> tuple[tuple[str, re.Pattern], ...]:
    patterns = []
    for path in spec()["paths"]:
        regex = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path))
        patterns.append((path, re.compile(regex)))
    # Concrete paths first: /docs before /docs/{asset}, fewer parameters first.
    patterns.sort(key=lambda item: (item[0].count("{"), item[0]))
    return tuple(patterns)


def find_path(path: str) -> str | None:
    """The documented path template that ``path`` (a concrete request path) matches."""
    for template, pattern in _path_patterns():
        if pattern.fullmatch(path):
            return template
    return None


# --- validation ---------------------------------------------------------------------------
class ContractError(AssertionError):
    """A response that does not match openapi.yaml."""


def _short(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _describe(error: BaseException, depth: int = 0) -> list[str]:
    """The messages of an openapi-core error and of everything it wraps."""
    pad = "  " * depth
    lines = [f"{pad}- {type(error).__name__}: {_short(str(error))}"]
    for schema_error in getattr(error, "schema_errors", ()) or ():
        if isinstance(schema_error, JsonSchemaError):
            where = schema_error.json_path
            lines.append(f"{pad}  at {where}: {_short(schema_error.message)}")
            for sub in sorted(schema_error.context or (), key=lambda e: e.json_path)[:6]:
                lines.append(f"{pad}    (alternative) at {sub.json_path}: {_short(sub.message)}")
        else:
            lines.append(f"{pad}  {schema_error}")
    for attr in ("__cause__", "__context__"):
        inner = getattr(error, attr, None)
        if inner is not None and inner is not error and depth < 4:
            lines.extend(_describe(inner, depth + 1))
            break
    return lines


def _body_preview(response) -> str:
    data = response.get_data()
    text = data[:1500].decode("utf-8", "replace")
    return text + ("..." if len(data) > 1500 else "")


def _fail(request: Request, response, problems: Iterable[str]) -> None:
    lines = [f"{request.method} {request.full_path.rstrip('?')} -> {response.status} "
             f"({response.content_type}) does not match openapi.yaml:"]
    lines.extend(problems)
    lines.append(f"response headers: {dict(response.headers)}")
    lines.append(f"response body: {_body_preview(response)}")
    raise ContractError("\n".join(lines))


def _problem_errors(response) -> list[str]:
    """The rules the spec states in prose for every problem body."""
    if response.mimetype != PROBLEM_JSON:
        return []
    try:
        body = json.loads(response.get_data())
    except ValueError as error:
        return [f"- the problem body is not JSON: {error}"]
    if not isinstance(body, dict):
        return ["- the problem body is not an object"]
    errors = []
    if body.get("status") != response.status_code:
        errors.append(f"- problem status {body.get('status')!r} differs from the HTTP status "
                      f"{response.status_code}")
    if body.get("type") != f"urn:patience:problem:{body.get('code')}":
        errors.append(f"- problem type {body.get('type')!r} is not "
                      f"'urn:patience:problem:<code>' for code {body.get('code')!r}")
    return errors


def _validate_against(pointer: str, response) -> list[str]:
    """Check a problem response that no operation documents against a component schema."""
    if response.mimetype != PROBLEM_JSON:
        return [f"- expected {PROBLEM_JSON}, got {response.content_type!r}"]
    try:
        body = json.loads(response.get_data())
    except ValueError as error:
        return [f"- the body is not JSON: {error}"]
    errors = _schema_errors(pointer, body)
    if "X-Request-ID" not in response.headers:
        errors.append("- the required header X-Request-ID is missing")
    return errors + _problem_errors(response)


def _documented(template: str, method: str, status: int) -> tuple[dict, str] | None:
    """The response the spec documents for ``status`` of the operation (its own, its
    ``NXX`` or its ``default``, a ``$ref`` followed) and its JSON pointer; None if none."""
    responses = spec()["paths"][template][method].get("responses", {})
    for key in (str(status), f"{str(status)[0]}XX", "default"):
        if key in responses:
            return _resolve(responses[key],
                            f"/paths/{_escape(template)}/{method}/responses/{key}")
    return None


def _status_and_type_errors(template: str, method: str, response) -> list[str]:
    found = _documented(template, method, response.status_code)
    if found is None:
        responses = spec()["paths"][template][method].get("responses", {})
        return [f"- status {response.status_code} is not documented "
                f"(documented: {', '.join(sorted(responses))})"]
    content = found[0].get("content")
    if not content:
        return [] if not response.get_data() else [
            f"- status {response.status_code} is documented without a body, got "
            f"{len(response.get_data())} bytes"]
    if response.mimetype not in content:
        return [f"- content type {response.mimetype!r} is not documented "
                f"(documented: {', '.join(content)})"]
    return []


def check_response(request: Request, response, mode: str | bool = True) -> None:
    """Validate one request/response pair: raise :class:`ContractError` when the response
    does not match the spec (the request's own errors are not failures)."""
    if mode is False or mode == "off":
        return
    method = request.method.lower()
    template = find_path(request.path)
    if method in ("options", "head"):
        # CORS preflight and HEAD are answered by Flask itself and not documented; they
        # must not fail all the same.
        if response.status_code >= 500:
            _fail(request, response, [f"- {request.method} answered a server error"])
        return
    if template is None:
        problems = _validate_against("/components/schemas/Problem404", response)
        if response.status_code != 404:
            problems.insert(0, f"- an undocumented path must answer 404, not "
                               f"{response.status_code}")
        if problems:
            _fail(request, response, problems)
        return
    operation = spec()["paths"][template].get(method)
    if operation is None:
        problems = _validate_against("/components/schemas/Problem405", response)
        if response.status_code != 405:
            problems.insert(0, f"- {request.method} is not documented on {template}: the "
                               f"answer must be 405, not {response.status_code}")
        if problems:
            _fail(request, response, problems)
        return
    if is_planned(operation) and response.status_code == 404:
        try:
            code = json.loads(response.get_data()).get("code")
        except (ValueError, AttributeError):
            code = None
        if code == "not_found":  # not implemented yet
            return

    problems = _status_and_type_errors(template, method, response)
    if not problems and mode not in ("status",):
        problems.extend(_response_errors(template, method, response))
        problems.extend(_problem_errors(response))
    if problems:
        _fail(request, response, problems)


def request_errors(request: Request) -> list[str]:
    """How the request deviates from the spec (never a failure: tests send bad requests
    on purpose, and openapi-core itself can choke on them)."""
    try:
        errors = list(openapi().iter_request_errors(WerkzeugOpenAPIRequest(request)))
    except Exception as error:  # bodies that are not even decodable
        return [f"- the request could not be validated: {type(error).__name__}: {error}"]
    return [_short(" ".join(_describe(error)), 1000) for error in errors]


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _resolve(obj: dict, pointer: str) -> tuple[dict, str]:
    """Follow a ``$ref`` (inside the spec): the object and its JSON pointer."""
    while "$ref" in obj:
        pointer = obj["$ref"].removeprefix("#")
        obj = spec()
        for part in pointer.strip("/").split("/"):
            obj = obj[part.replace("~1", "/").replace("~0", "~")]
    return obj, pointer


def _schema_errors(pointer: str, instance: Any, where: str = "") -> list[str]:
    """How ``instance`` deviates from the spec's schema at ``pointer`` (jsonschema-rs)."""
    errors = []
    for error in compiled_validator(pointer).iter_errors(instance):
        path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}"
                       for part in error.instance_path)
        errors.append(f"- {where}at ${path}: {_short(error.message)}")
    return errors


# How a documented body that is not JSON is read before its schema is checked: as
# openapi() reads the media types it is given (YAML, text); a type not named here has no
# schema in the spec.
_TEXT_TYPES = ("text/", "image/svg+xml", "application/x-ndjson")


def _body(response) -> tuple[bool, Any]:
    """``(readable, value)``: the response's body as its schema describes it."""
    data = response.get_data()
    if response.is_json:
        return True, json.loads(data)
    if response.mimetype == "application/yaml":
        return True, yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if response.mimetype.startswith(_TEXT_TYPES):
        return True, data.decode("utf-8")
    return False, None


def _response_errors(template: str, method: str, response) -> list[str]:
    """The response's documented headers and body checked against their schemas (its
    status is a documented one: :func:`_status_and_type_errors`)."""
    documented, pointer = _documented(template, method, response.status_code)
    errors = []
    for name, header in documented.get("headers", {}).items():
        header, header_pointer = _resolve(header, f"{pointer}/headers/{_escape(name)}")
        value = response.headers.get(name)
        if value is None:
            if header.get("required"):
                errors.append(f"- the required header {name} is missing")
            continue
        if _resolve(header["schema"], f"{header_pointer}/schema")[0].get("type") == "integer":
            try:
                value = int(value)
            except ValueError:
                errors.append(f"- header {name}: {value!r} is not an integer")
                continue
        errors += _schema_errors(f"{header_pointer}/schema", value, f"header {name} ")
    content = documented.get("content", {}).get(response.mimetype)
    if content and "schema" in content:
        try:
            readable, body = _body(response)
        except (ValueError, yaml.YAMLError) as error:
            return [*errors, f"- the body is not {response.mimetype}: {_short(str(error))}"]
        if readable:
            errors += _schema_errors(
                f"{pointer}/content/{_escape(response.mimetype)}/schema", body)
    return errors


class ContractResponse(TestResponse):
    """A test response that knows the request as the spec sees it."""

    contract_request: Request | None = None

    @cached_property
    def contract_request_errors(self) -> list[str]:
        """How the request deviated from the spec (computed on first use)."""
        return [] if self.contract_request is None else request_errors(self.contract_request)


class ValidatingClient(FlaskClient):
    """A Flask test client that checks every response against ``openapi.yaml``.

    ``client.get(url, contract="status")`` checks only status and content type,
    ``contract=False`` nothing.  ``response.contract_request_errors`` lists how the
    request itself deviated from the spec (deliberately invalid requests are fine).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.response_wrapper = type(
            "ValidatedTestResponse", (ContractResponse, self.response_wrapper), {})

    def run_wsgi_app(self, environ: dict, buffered: bool = False):
        # Keep a copy of the body: the application consumes the input stream, and the
        # request is validated after it answered.
        body = environ["wsgi.input"].read()
        environ["wsgi.input"] = io.BytesIO(body)
        environ["contract.body"] = body
        return super().run_wsgi_app(environ, buffered=buffered)

    def open(self, *args: Any, contract: str | bool = True, **kwargs: Any):
        response = super().open(*args, **kwargs)
        sent = getattr(response, "request", None)
        if sent is None:  # pragma: no cover - werkzeug always sets it
            raise ContractError("the test client gave a response without its request")
        environ = dict(sent.environ)
        environ["wsgi.input"] = io.BytesIO(environ.get("contract.body", b""))
        request = Request(environ)
        if response.mimetype == "text/event-stream":
            # A stream of Server-Sent Events may have no end to read: status and type only.
            if contract is True:
                contract = "status"
        elif contract:
            # Read the whole body now and release what produced it (a file, for static
            # assets): the body stays readable, and nothing is left open.
            response.get_data()
            response.close()
        check_response(request, response, contract)
        response.contract_request = request
        return response
