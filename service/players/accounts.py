"""Accounts, identities and what a player reads of their own: :class:`Players`.

A player token is ``pl_<player id>_<secret>``: the id names the profile to read, and
only the token's SHA-256 is stored, compared in constant time on every request (read
from Redis each time: a rotated or revoked token is refused at once, by every
replica).  :meth:`Players.identify` is the one resolution of a bearer token into an
identity; an OpenID Connect token (a JWT) has its one call site there.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from service.engine import variants
from service.game.application import Games
from service.game.errors import GameError
from service.game.idempotency import Reply
from service.game.pipeline import Write
from service.game.record import now, token_hash
from service.players.oidc import PROVIDER_UNAVAILABLE, InvalidIdentity
from service.storage import keys
from service.storage.player_store import PlayerStore, Unindexed

#: What a player token looks like (the secret: ``secrets.token_urlsafe(32)``).
PLAYER_TOKEN = re.compile(r"pl_((?:oidc-)?[a-z2-7]{26})_([A-Za-z0-9_-]{43})")
#: What a JWT looks like: three base64url parts (a game's token never holds a dot).
JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
#: A new account's kind: issued by this server, or an OpenID Connect identity.
ISSUED, OIDC = "issued", "oidc"
#: Statuses of a game in a player's list.
STATUSES = keys.GAME_STATUSES
#: Summaries per round trip when every game of a list is sent (NDJSON).
STREAM_CHUNK = 250


class IdentityVerifier(Protocol):
    """What checks an OpenID Connect token: (issuer, subject), or InvalidIdentity."""

    def verify(self, token: str) -> tuple[str, str]: ...


class IdentityProviderUnavailable(Exception):
    """The identity provider's keys could not be read: the token can be neither taken
    nor refused now (503, like storage that cannot be reached); ``retry_after``: the
    seconds before the provider is asked again."""

    def __init__(self, detail: str, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a request is: ``player`` (None: anonymous, or a game's own token), or a
    player token that is not valid (``invalid``, with why); ``name``: the player's
    display name, read with their token (None: none, or not read)."""

    player: str | None = None
    invalid: str | None = None
    name: str | None = None


ANONYMOUS = Identity()
#: A player token that is not (or no longer) valid.
INVALID = Identity(invalid="this player token is not valid")


def new_player_id() -> str:
    """128 random bits, base32 (26 characters, no underscore)."""
    return base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()


def oidc_player_id(issuer: str, subject: str) -> str:
    """The player id of an OpenID Connect identity: ``oidc-`` and 26 characters of the
    base32 of SHA-256(issuer, newline, subject)."""
    digest = hashlib.sha256(f"{issuer}\n{subject}".encode()).digest()
    return "oidc-" + base64.b32encode(digest).decode()[:26].lower()


def not_found() -> GameError:
    return GameError(401, "invalid_token", "this player token is not valid (revoked, "
                     "rotated, or its player erased)")


class Players:
    """Accounts and what their players read of their own, on a :class:`PlayerStore`."""

    def __init__(self, store: PlayerStore, games: Games, *,
                 verifier: IdentityVerifier | None = None):
        self.store = store
        self.games = games
        self.verifier = verifier

    # --- identity -------------------------------------------------------------------
    def identify(self, bearer: str | None) -> Identity:
        """The identity of a request's bearer token: a player (their token, or an
        OpenID Connect token when a verifier is set), an invalid player token, or
        anonymous (none, or what may be a game's own token: no Redis read)."""
        if not bearer:
            return ANONYMOUS
        found = PLAYER_TOKEN.fullmatch(bearer)
        if found is not None:
            stored, name = self.store.token_and_name(found[1])
            if stored is not None and secrets.compare_digest(stored, token_hash(bearer)):
                return Identity(found[1], name=name)
            return INVALID
        if JWT.fullmatch(bearer):
            if self.verifier is None:  # no OIDC_ISSUER: just a bad token
                return Identity(invalid="this server takes no OpenID Connect token")
            # --- OpenID Connect: the one call site of the verifier --------------------
            try:
                issuer, subject = self.verifier.verify(bearer)
            except InvalidIdentity as error:
                if error.code == PROVIDER_UNAVAILABLE:  # no answer about the token: 503
                    raise IdentityProviderUnavailable(error.detail,
                                                      error.retry_after) from None
                return Identity(invalid=error.detail)
            player = oidc_player_id(issuer, subject)
            self.store.create(player, {keys.PLAYER_NAME: "Player", keys.PLAYER_CREATED: now(),
                                       keys.PLAYER_KIND: OIDC, keys.PLAYER_ISSUER: issuer,
                                       keys.PLAYER_SUBJECT: subject})
            return Identity(player)
        return ANONYMOUS

    # --- accounts -------------------------------------------------------------------
    def register(self, name: str) -> tuple[dict, str]:
        """A new account: its profile and its token (shown this once)."""
        for _attempt in range(8):
            player = new_player_id()
            token = _token(player)
            fields = {keys.PLAYER_NAME: name, keys.PLAYER_CREATED: now(),
                      keys.PLAYER_KIND: ISSUED, keys.PLAYER_TOKEN: token_hash(token)}
            if self.store.create(player, fields):
                return _profile(player, fields), token
        raise RuntimeError("could not find a free player id")  # pragma: no cover

    def profile(self, player: str) -> dict:
        fields = self.store.profile(player)
        if fields is None:
            raise not_found()
        return _profile(player, fields)

    def rotate(self, player: str) -> tuple[dict, str]:
        """A new token for the player; the old one is refused from now on."""
        profile = self.profile(player)
        token = _token(player)
        self.store.set_token(player, token_hash(token))
        return profile, token

    def revoke(self, player: str) -> None:
        self.store.set_token(player, None)

    # --- games ----------------------------------------------------------------------
    def claim(self, player: str, write: Write, game_id: str) -> Reply:
        """``write.token``: the game's own token."""
        return self.games.claim(game_id, write, player)

    def page(self, player: str, *, variant: str | None, status: str | None, limit: int,
             cursor: int | None, token: str | None = None) -> bytes | None:
        """A page of "my games" as the JSON body it is answered with: the stored
        summaries (the server's own JSON) put together as they are, never decoded.
        With ``token`` (a player token of ``player``'s shape, not checked yet) the
        page's one round trip reads the stored hash too, compared here as
        :meth:`identify` compares it: None when the token is not valid."""
        joined, following, stored = self._page(player, cursor=cursor, limit=limit,
                                               variant=variant, status=status,
                                               with_token=token is not None)
        if token is not None and (stored is None
                                  or not secrets.compare_digest(stored, token_hash(token))):
            return None
        return b"".join((b'{"games":[', joined, b'],"next_cursor":',
                         b"null" if following is None else b'"%d"' % following, b"}"))

    def every(self, player: str, *, variant: str | None, status: str | None
              ) -> Iterator[bytes]:
        """Every matching summary as NDJSON, newest first, a chunk per round trip."""
        cursor = None
        while True:
            joined, cursor, _ = self._page(player, cursor=cursor, limit=STREAM_CHUNK,
                                           variant=variant, status=status, separator=b"\n")
            if joined:
                yield joined + b"\n"
            if cursor is None:
                return

    def _page(self, player: str, **query) -> tuple[bytes, int | None, str | None]:
        """The store's page; a list written before its indexes has them built first."""
        try:
            return self.store.page(player, **query)
        except Unindexed:
            self.store.reindex(player, [variant.id for variant in variants()])
        try:
            return self.store.page(player, **query)
        except Unindexed:  # no such player (erased meanwhile): nothing to list
            return b"", None, None

    def stats(self, player: str) -> dict:
        """Per variant, from the figures the server wrote as the player's games ended."""
        counters = self.store.stats(player)
        rows = []
        for variant in variants():
            def get(name, default=0, variant=variant):
                return counters.get(f"{variant.id}:{name}", default)

            won, lost, resigned = get("won"), get("lost"), get("resigned")
            played = won + lost + resigned
            rows.append({
                "variant": variant.id, "played": played, "won": won, "lost": lost,
                "resigned": resigned, "in_play": max(0, get("in_play")),
                "win_rate": won / played if played else None,
                "current_streak": get("streak"), "longest_streak": get("longest_streak"),
                "fewest_moves": get("fewest_moves", None),
                "fastest_win_ms": get("fastest_ms", None)})
        return {"variants": rows}

    def export(self, player: str) -> dict:
        """Everything the server keeps about the player, but the token's hash."""
        profile = self.profile(player)
        games = sorted(self.store.summaries(player).values(),
                       key=lambda game: game["created"], reverse=True)
        return {"player": profile, "stats": self.stats(player)["variants"], "games": games}

    def erase(self, player: str) -> None:
        """The player's identity, list and statistics deleted; their games detached
        first (anonymous again, still playable with their own tokens)."""
        self.profile(player)
        for game_id in self.store.summaries(player):
            self.games.detach(game_id, player)
        self.store.drop(player, [variant.id for variant in variants()])


def _token(player: str) -> str:
    return f"pl_{player}_{secrets.token_urlsafe(32)}"


def _profile(player: str, fields: dict) -> dict:
    profile = {"id": player, "name": fields[keys.PLAYER_NAME],
               "created": fields[keys.PLAYER_CREATED],
               "kind": fields.get(keys.PLAYER_KIND, ISSUED)}
    if keys.PLAYER_ISSUER in fields:
        profile["issuer"] = fields[keys.PLAYER_ISSUER]
        profile["subject"] = fields[keys.PLAYER_SUBJECT]
    return profile
