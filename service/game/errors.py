"""The refusals of the service (not of the rules), each defined once: every place that
refuses for the same reason answers the same status and code (docs/architecture.md,
"Refusals")."""

from __future__ import annotations


class GameError(Exception):
    """A refusal: HTTP status, stable code, detail."""

    def __init__(self, status: int, code: str, detail: str, headers: dict | None = None):
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        #: Headers of the answer (a Location, a Retry-After).
        self.headers = headers or {}


def game_not_found(game_id: str | None = None) -> GameError:
    named = f" {game_id!r}" if game_id is not None else " with this id"
    return GameError(404, "game_not_found", f"there is no game{named}")


def wrong_token() -> GameError:
    return GameError(403, "wrong_token", "this is not the player token of the game")


def version_mismatch(detail: str) -> GameError:
    return GameError(412, "version_mismatch", detail)


def idempotency_key_reused() -> GameError:
    return GameError(422, "idempotency_key_reused",
                     "this Idempotency-Key was used with another request body")


def write_conflict(attempts: int) -> GameError:
    return GameError(409, "write_conflict",
                     f"the game kept changing: gave up after {attempts} attempts")


def game_not_over() -> GameError:
    return GameError(409, "game_not_over",
                     "the analysis would tell the stock: it is shown once the game is over")


def no_winnable_deal(variant_name: str) -> GameError:
    return GameError(422, "no_winnable_deal",
                     f"no deal of {variant_name} proved winnable could be found in time; "
                     "try again later, or ask for any deal")


def ranked_game(what: str) -> GameError:
    return GameError(409, "ranked_game", f"this is a ranked game of a daily deal: {what}")


def ranked_game_hidden() -> GameError:
    return GameError(403, "ranked_game_hidden",
                     "this ranked game of a daily deal is its player's only until the day "
                     "is over")


def ranked_hint_refused() -> GameError:
    return GameError(409, "ranked_hint_refused",
                     "no hint for a ranked game of a daily deal while its day is open")


def ranked_analysis_refused() -> GameError:
    return GameError(409, "ranked_analysis_refused",
                     "the analysis of a daily deal would tell its cards: it is shown once "
                     "the day is over")


def day_closed() -> GameError:
    return GameError(409, "day_closed", "the day of this ranked game is over: no more moves")
