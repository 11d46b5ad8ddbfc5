"""Request bodies: marshmallow schemas, instantiated once (unknown fields are refused),
and :func:`load_move`, where the engine checks the move."""

import re
import unicodedata

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, validate, validates_schema

from service.engine import ALL_CARDS, MOVE, InvalidMoveError, Move, variants
from service.game.record import DEFAULT_UNDO, UNDO_POLICIES
from service.players.accounts import STATUSES

MAX_SEED = 2**64 - 1
CARD_CODES = frozenset(str(card) for card in ALL_CARDS)


class StrictSchema(Schema):
    class Meta:
        unknown = RAISE


class WholeInteger(fields.Integer):
    """An integer that, as JSON Schema has it, may also be written as a number with a zero
    fraction (``42.0``, ``4.2e1``): the integer it equals, up to 2**53, past which a float
    no longer spells every integer (write those without a fraction).  Strings and booleans
    are still refused."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
            value = int(value)
        return super()._deserialize(value, attr, data, **kwargs)


class StrictBoolean(fields.Boolean):
    """JSON's true or false only: not 1, 0, "true" or "yes"."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


class CreateGameSchema(StrictSchema):
    """``POST /v1/games``: a null or absent ``seed`` lets the server choose one."""

    variant = fields.String(
        required=True, validate=validate.OneOf([variant.id for variant in variants()]))
    # strict: 42.5, "42" and true are not integers (marshmallow never takes booleans).
    seed = WholeInteger(strict=True, allow_none=True, load_default=None,
                          validate=validate.Range(0, MAX_SEED))
    undo = fields.String(load_default=DEFAULT_UNDO, validate=validate.OneOf(UNDO_POLICIES))
    #: A deal that the server's solver proved winnable (the server chooses the seed).
    winnable = StrictBoolean(load_default=False)

    @validates_schema
    def _winnable_without_seed(self, data, **_kwargs):
        if data.get("winnable") and data.get("seed") is not None:
            raise ValidationError(
                {"winnable": ["The server chooses the seed of a winnable deal: send no seed."]})


def load_move(body: dict) -> tuple[Move, str | None]:
    """``POST .../moves``: the move, checked by the engine alone (``Move.from_dict``, which
    names every wrong field), and its ``card`` precondition (a card move may carry it, as
    ``GET .../moves`` lists it; None when absent)."""
    fields = dict(body)
    has_card = fields.get("type") == MOVE and "card" in fields
    card = fields.pop("card", None) if has_card else None
    problems = {}
    try:
        move = Move.from_dict(fields)
    except InvalidMoveError as error:
        problems.update(error.fields or {"_schema": [error.message]})
    if has_card and (not isinstance(card, str) or card not in CARD_CODES):
        problems["card"] = ["A card code: rank of A23456789TJQK, then suit of SHDC."]
    if problems:
        raise ValidationError(problems)
    return move, card


class UndoSchema(StrictSchema):
    """``POST .../undo`` takes no field: an empty body or ``{}``."""


#: Unicode categories a display name may not hold: controls, format characters (the
#: invisible and bidirectional ones), line and paragraph separators, surrogates,
#: private use and unassigned code points.
REFUSED_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"))
NAME_LENGTH = 40


class DisplayName(fields.String):
    """A player's display name: NFC-normalised (canonical equivalence only: what the
    player typed, composed), trimmed, 1 to 40 characters, none of
    :data:`REFUSED_CATEGORIES`.  Never used in a key."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if len(text) > 4 * NAME_LENGTH:  # before any normalisation: a long name is refused
            raise ValidationError(f"At most {NAME_LENGTH} characters.")
        text = unicodedata.normalize("NFC", text).strip()
        if not 1 <= len(text) <= NAME_LENGTH:
            raise ValidationError(f"1 to {NAME_LENGTH} characters, not counting the "
                                  "spaces around them.")
        if any(unicodedata.category(char) in REFUSED_CATEGORIES for char in text):
            raise ValidationError("No control, format, separator, private-use or "
                                  "unassigned characters.")
        return text


class NewPlayerSchema(StrictSchema):
    """``POST /v1/players``."""

    name = DisplayName(required=True)


class ClaimSchema(StrictSchema):
    """``POST /v1/players/me/games``: the game, and its own token, which proves it."""

    game_id = fields.String(required=True, validate=validate.Regexp(r"^[A-Za-z0-9_-]{1,64}$"))
    game_token = fields.String(required=True,
                               validate=validate.Regexp(r"^[A-Za-z0-9._~+/-]{1,256}=*$"))


class GamesQuerySchema(Schema):
    """``GET /v1/players/me/games``'s query (other parameters are ignored)."""

    class Meta:
        unknown = EXCLUDE

    variant = fields.String(validate=validate.OneOf([variant.id for variant in variants()]),
                            load_default=None)
    status = fields.String(validate=validate.OneOf(STATUSES), load_default=None)
    limit = fields.Integer(strict=False, validate=validate.Range(1, 100), load_default=50)
    cursor = fields.String(validate=validate.Regexp(r"^[0-9]{1,18}$"), load_default=None)


create_game_schema = CreateGameSchema()
games_query_schema = GamesQuerySchema()
new_player_schema = NewPlayerSchema()
claim_schema = ClaimSchema()
undo_schema = UndoSchema()


_BOARD_CURSOR = r"^-?[0-9]{1,17}:[a-z0-9-]{1,40}$"


class BoardQuerySchema(Schema):
    """A board's query: ``limit`` and ``cursor`` (other parameters are ignored)."""

    class Meta:
        unknown = EXCLUDE

    limit = fields.Integer(strict=False, validate=validate.Range(1, 100), load_default=20)
    cursor = fields.String(validate=validate.Regexp(_BOARD_CURSOR), load_default=None)


#: The entries either side of a player that a board's read of them answers: unless
#: asked, and at most.
AROUND_DEFAULT, AROUND_MAX = 5, 50


class AroundQuerySchema(Schema):
    """``GET .../board/players/{player_id}``'s query: the entries either side."""

    class Meta:
        unknown = EXCLUDE

    around = fields.Integer(strict=False, validate=validate.Range(0, AROUND_MAX),
                            load_default=AROUND_DEFAULT)


board_query_schema = BoardQuerySchema()
around_query_schema = AroundQuerySchema()

_QUERY_VALUES = {"variant": frozenset(variant.id for variant in variants()),
                 "status": frozenset(STATUSES)}


def load_games_query(args: dict[str, str]) -> dict:
    """What ``games_query_schema.load(args)`` answers.  A query whose every parameter
    is spelled as the schema's own values are (a variant's or a status's id, digits)
    is read here, in a fraction of the schema's time (a page of "my games" is a hot
    read); anything else goes through the schema, its refusals included."""
    query = {"variant": None, "status": None, "limit": 50, "cursor": None}
    for name, value in args.items():
        if name not in query:
            continue  # ignored, as the schema ignores it
        digits = value.isascii() and value.isdigit()
        if name in _QUERY_VALUES and value in _QUERY_VALUES[name] \
                or name == "cursor" and digits and len(value) <= 18:
            query[name] = value
        elif name == "limit" and digits and len(value) <= 3 and 1 <= int(value) <= 100:
            query[name] = int(value)
        else:
            return games_query_schema.load(args)
    return query


_CURSOR = re.compile(_BOARD_CURSOR[1:-1])


def _small(value: str, low: int, high: int) -> int | None:
    """``value`` as the schemas' Integer reads it, when it is plain digits within
    [low, high]; else None."""
    if value.isascii() and value.isdigit() and len(value) <= 3 and low <= int(value) <= high:
        return int(value)
    return None


def load_board_query(args: dict[str, str]) -> dict:
    """What ``board_query_schema.load(args)`` answers, read here when every parameter
    is spelled as the schema's own values are (digits, a cursor the server gave); else
    through the schema, its refusals included (a board's page is a hot read)."""
    query = {"limit": 20, "cursor": None}
    for name, value in args.items():
        if name == "limit" and (limit := _small(value, 1, 100)) is not None:
            query["limit"] = limit
        elif name == "cursor" and _CURSOR.fullmatch(value):
            query["cursor"] = value
        elif name in query:
            return board_query_schema.load(args)
    return query


_AROUND_ONLY = re.compile(r"around=([0-9]{1,3})")


def load_around_query(args: dict[str, str]) -> dict:
    """What ``around_query_schema.load(args)`` answers, read as :func:`load_board_query`
    reads a board's."""
    query = {"around": AROUND_DEFAULT}
    for name, value in args.items():
        if name == "around" and (around := _small(value, 0, AROUND_MAX)) is not None:
            query["around"] = around
        elif name in query:
            return around_query_schema.load(args)
    return query


def quick_around(query_string: str) -> int | None:
    """The ``around`` of a raw query string that is ``around=<digits>`` alone, within
    the schema's range, as clients send it (no query parsed); else None (read the query
    with :func:`load_around_query`)."""
    found = _AROUND_ONLY.fullmatch(query_string)
    return _small(found[1], 0, AROUND_MAX) if found else None
