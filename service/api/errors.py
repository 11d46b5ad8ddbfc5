"""The one place where failures become RFC 9457 problem details.

Every refusal answers ``application/problem+json``:
``{"type": "urn:patience:problem:<code>", "title", "status", "detail", "code"}``, plus
``errors`` (field -> messages) for ``invalid_request``.  Nothing reaches the client as a
500 unless a bug does: the last-resort handler logs it and answers ``internal_error``.
"""

from __future__ import annotations

import logging

import orjson
from flask import Flask, Response
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException

from service.engine import RULE_CODES, IllegalMoveError, InvalidMoveError
from service.game.errors import GameError
from service.observability import telemetry
from service.players.accounts import IdentityProviderUnavailable
from service.storage.game_store import StorageUnavailable

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger("patience.errors")

TITLES = {
    "invalid_request": "The request is not valid",
    "invalid_json": "The body is not a JSON object",
    "invalid_header": "A request header is not valid",
    "missing_token": "A player token is required",
    "invalid_token": "The player token is not valid",
    "already_owned": "The game belongs to a player already",
    "wrong_token": "This is not the player token of the game",
    "game_not_found": "No such game",
    "not_found": "No such resource",
    "method_not_allowed": "Method not allowed",
    "nothing_to_undo": "Nothing to undo",
    "undo_blocked": "This move cannot be taken back",
    "undo_disabled": "Undo is off for this game",
    "game_over": "The game is over",
    "card_mismatch": "Another card would move",
    "write_conflict": "The game kept changing",
    "version_mismatch": "The game is not at the version of If-Match",
    "body_too_large": "The body is larger than 16 KiB",
    "request_timeout": "The body did not arrive in time",
    "unsupported_media_type": "The body must be application/json",
    "idempotency_key_reused": "The Idempotency-Key was used for another request",
    "rate_limited": "Too many requests",
    "storage_unavailable": "The game storage is unavailable",
    "identity_provider_unavailable": "The identity provider is unavailable",
    "too_many_streams": "Too many open event streams",
    "no_winnable_deal": "No deal proved winnable could be found in time",
    "game_not_over": "The game is not over",
    "ranked_game": "This is a ranked game of a daily deal",
    "ranked_game_hidden": "This ranked game is its player's only until the day is over",
    "ranked_hint_refused": "No hint for a ranked game while its day is open",
    "ranked_analysis_refused": "No analysis of a daily deal while its day is open",
    "day_closed": "The day is over",
    "day_not_open": "The day has not begun",
    "day_not_found": "No such day",
    "attempt_taken": "The player has made their attempt already",
    "account_too_new": "The account was made after the day began",
    "daily_deal_unavailable": "The day's deal is not ready",
    "not_on_board": "The player has no entry on this board",
    "internal_error": "Internal error",
    # Refused by gunicorn before the app (service/runtime/refusals.py).
    "malformed_request": "The request is not valid HTTP/1.1",
    "uri_too_long": "The request line is too long",
    "header_fields_too_large": "The header fields are too large",
    "expectation_failed": "The expectation cannot be met",
    "unsupported_transfer_coding": "The transfer coding is not supported",
    "forbidden": "The connection is refused",
}

#: Werkzeug's HTTP errors: status -> our code.
HTTP_CODES = {
    400: "invalid_request",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "body_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


class BadRequest(Exception):
    """A request refused before it reaches the application (bad JSON, bad header...)."""

    def __init__(self, status: int, code: str, detail: str, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers or {}


def problem_body(status: int, code: str, detail: str, *, errors: dict | None = None,
                 title: str | None = None) -> bytes:
    """The JSON document of a problem (also written by gunicorn's processes for what they
    refuse before the app: :mod:`service.runtime.refusals`)."""
    title = title or TITLES.get(code) or code.replace("_", " ").capitalize()
    body = {"type": f"urn:patience:problem:{code}", "title": title,
            "status": status, "detail": detail, "code": code}
    if errors is not None:
        body["errors"] = errors
    return orjson.dumps(body)


def problem(status: int, code: str, detail: str, *, errors: dict | None = None,
            headers: dict | None = None, title: str | None = None) -> Response:
    response = Response(problem_body(status, code, detail, errors=errors, title=title),
                        status, mimetype=PROBLEM_JSON)
    response.headers.update(headers or {})
    telemetry.note_problem(code)  # for the request log line
    return response


def _validation(error: ValidationError) -> Response:
    messages = error.messages if isinstance(error.messages, dict) else {"_schema": error.messages}
    fields = ", ".join(sorted(messages))
    return problem(400, "invalid_request", f"invalid field(s): {fields}", errors=messages)


def _invalid_move(error: InvalidMoveError) -> Response:
    return problem(400, "invalid_request", error.message,
                   errors=error.fields or {"_schema": [error.message]})


def _illegal_move(error: IllegalMoveError) -> Response:
    meaning = RULE_CODES[error.code]
    return problem(422, error.code, error.message, title=meaning[0].upper() + meaning[1:])


def _game_error(error: GameError) -> Response:
    return problem(error.status, error.code, error.detail, headers=error.headers)


def _bad_request(error: BadRequest) -> Response:
    return problem(error.status, error.code, error.detail, headers=error.headers)


def _storage_unavailable(error: StorageUnavailable) -> Response:
    log.warning("storage unavailable: %s", error)
    return problem(503, "storage_unavailable", "the game storage cannot be reached; retry soon",
                   headers={"Retry-After": "1"})


def _identity_provider_unavailable(error: IdentityProviderUnavailable) -> Response:
    log.warning("identity provider unavailable: %s", error)
    return problem(503, "identity_provider_unavailable",
                   "the identity provider's keys cannot be read; retry soon",
                   headers={"Retry-After": str(error.retry_after or 5)})


def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    code = HTTP_CODES.get(status) or error.name.lower().replace(" ", "_").replace("'", "")
    headers = {}
    if status == 405 and getattr(error, "valid_methods", None):
        headers["Allow"] = ", ".join(error.valid_methods)
    if status == 429:
        headers["Retry-After"] = "1"  # the limiter raises it to the window's reset
    detail = {
        404: "no resource at this path",
        405: "this path does not take this method",
        408: "the request body did not arrive in time (less than its Content-Length?)",
        413: "a request body may hold at most 16 KiB",
        415: "send the body as application/json (UTF-8)",
        429: f"rate limit exceeded ({error.description}); retry later",
    }.get(status, error.description or error.name)
    return problem(status, code, detail, headers=headers)


def _last_resort(error: Exception) -> Response:
    log.exception("unhandled error: %s", type(error).__name__)
    return problem(500, "internal_error", "the server failed to answer this request")


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(ValidationError, _validation)
    app.register_error_handler(InvalidMoveError, _invalid_move)
    app.register_error_handler(IllegalMoveError, _illegal_move)
    app.register_error_handler(GameError, _game_error)
    app.register_error_handler(BadRequest, _bad_request)
    app.register_error_handler(StorageUnavailable, _storage_unavailable)
    app.register_error_handler(IdentityProviderUnavailable, _identity_provider_unavailable)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _last_resort)
