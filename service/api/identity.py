"""Who a request is: its bearer token resolved once (:func:`request_identity`, kept on
``flask.g``), for the views and for the rate limiter's key (a player's requests count
under the player, wherever they come from)."""

from __future__ import annotations

from flask import g, request

from service.api.context import services
from service.api.errors import BadRequest
from service.players.accounts import (
    ANONYMOUS,
    INVALID,
    PLAYER_TOKEN,
    Identity,
    IdentityProviderUnavailable,
)
from service.storage.game_store import StorageUnavailable


def _bearer() -> str | None:
    scheme, _, token = request.environ.get("HTTP_AUTHORIZATION", "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def request_identity() -> Identity:
    """The request's identity, resolved once per request (a player token is read from
    Redis: no process keeps it, so a revoked token is refused at once)."""
    found = g.get("identity")
    if found is None:
        bearer = _bearer()
        found = services().players.identify(bearer) if bearer else ANONYMOUS
        g.identity = found
    return found


def unchecked_player_token() -> tuple[str, str] | None:
    """(player, token) of a bearer token shaped as a player token, while the request's
    identity is not resolved yet: for a read that checks the token in its own round
    trip (a page of "my games"), then says what it found (:func:`checked`).  None
    otherwise (no such token, or the identity is known already)."""
    if g.get("identity") is not None:
        return None
    bearer = _bearer()
    found = PLAYER_TOKEN.fullmatch(bearer) if bearer else None
    return None if found is None else (found[1], bearer)


def checked(player: str | None) -> None:
    """The identity a read's own check of :func:`unchecked_player_token` found, kept as
    :func:`request_identity` keeps its own: the player, or (None) 401 ``invalid_token``
    as :func:`current_player` answers it."""
    if player is None:
        g.identity = INVALID
        current_player()  # raises
    g.identity = Identity(player)


def current_player() -> str:
    """The player of the request: 401 ``missing_token`` without a bearer token, 401
    ``invalid_token`` for one that is no valid player's."""
    if not _bearer():
        raise BadRequest(401, "missing_token",
                         "send the player token as 'Authorization: Bearer <token>'",
                         headers={"WWW-Authenticate": 'Bearer realm="patience"'})
    identity = request_identity()
    if identity.player is None:
        raise BadRequest(401, "invalid_token", identity.invalid or
                         "this is not a player token (a game's own token plays its game)",
                         headers={"WWW-Authenticate":
                                  'Bearer realm="patience", error="invalid_token"'})
    return identity.player


def rate_limit_key(address: str) -> str:
    """The rate limiter's key: the player of a valid player identity, else ``address``
    (an invalid token counts under the client's address; so does a request whose
    identity cannot be read now)."""
    if "HTTP_AUTHORIZATION" not in request.environ:
        return address
    try:
        player = request_identity().player
    except (StorageUnavailable, IdentityProviderUnavailable):  # the view answers 503
        return address
    return f"player:{player}" if player is not None else address
