"""Request schemas (marshmallow), instantiated once.  Unknown fields are refused."""

from marshmallow import (
    RAISE,
    Schema,
    ValidationError,
    fields,
    post_load,
    validate,
    validates_schema,
)

from service.engine import MOVE, MOVE_TYPES, Move, variants
from service.game.record import DEFAULT_UNDO, UNDO_POLICIES

MAX_SEED = 2**64 - 1
MAX_PILE_ID = 32


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


class CreateGameSchema(StrictSchema):
    """``POST /v1/games``: a null or absent ``seed`` lets the server choose one."""

    variant = fields.String(
        required=True, validate=validate.OneOf([variant.id for variant in variants()]))
    # strict: 42.5, "42" and true are not integers (marshmallow never takes booleans).
    seed = WholeInteger(strict=True, allow_none=True, load_default=None,
                          validate=validate.Range(0, MAX_SEED))
    undo = fields.String(load_default=DEFAULT_UNDO, validate=validate.OneOf(UNDO_POLICIES))


class MoveSchema(StrictSchema):
    """One Move of API.md: ``{"type": "move", "from": ..., "to": ...}`` or a bare type."""

    type = fields.String(required=True, validate=validate.OneOf(MOVE_TYPES))
    source = fields.String(data_key="from", validate=validate.Length(1, MAX_PILE_ID))
    target = fields.String(data_key="to", validate=validate.Length(1, MAX_PILE_ID))

    @validates_schema
    def _piles_match_the_type(self, data, **_kwargs):
        if data["type"] == MOVE:
            missing = {"from": ["A card move needs a pile id."]} if "source" not in data else {}
            if "target" not in data:
                missing["to"] = ["A card move needs a pile id."]
            if missing:
                raise ValidationError(missing)
            return
        named = {key: [f"A {data['type']!r} move names no piles."]
                 for key, attr in (("from", "source"), ("to", "target")) if attr in data}
        if named:
            raise ValidationError(named)

    @post_load
    def _make_move(self, data, **_kwargs) -> Move:
        return Move(data["type"], data.get("source"), data.get("target"))


class UndoSchema(StrictSchema):
    """``POST .../undo`` takes no field: an empty body or ``{}``."""


create_game_schema = CreateGameSchema()
move_schema = MoveSchema()
undo_schema = UndoSchema()
