"""The registry of variants: one instance of each game's rules by its id
(:func:`register`, :func:`get_variant`, :func:`variants`).  A game's rules module
registers its variant class (``@register``) when :mod:`service.engine.rules` is
imported."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import COMMON_RULE_CODES, RULE_CODES, InvalidMoveError

if TYPE_CHECKING:
    from .base import State, Variant

_REGISTRY: dict[str, Variant] = {}


def register(cls: type[Variant]) -> type[Variant]:
    """Class decorator: make one instance of the variant available by its id, and its
    rule codes part of :data:`RULE_CODES` (the shared ones, then each game's in the
    order of :func:`variants`)."""
    shared = set(cls.rule_codes) & set(COMMON_RULE_CODES)
    if shared:
        raise ValueError(f"{cls.__name__} redefines the shared rule code(s) {sorted(shared)}")
    _REGISTRY[cls.id] = cls()
    codes = dict(COMMON_RULE_CODES)
    for variant in variants():
        codes.update(variant.rule_codes)
    RULE_CODES.clear()
    RULE_CODES.update(codes)
    return cls


def get_variant(variant_id: str) -> Variant:
    try:
        return _REGISTRY[variant_id]
    except (KeyError, TypeError):
        raise InvalidMoveError(
            "unknown_variant", f"{variant_id!r} is not a variant ({', '.join(_REGISTRY)})"
        ) from None


def variants() -> tuple[Variant, ...]:
    """Every registered variant, in the order of :attr:`Variant.order` (then by id)."""
    return tuple(sorted(_REGISTRY.values(), key=lambda v: (v.order, v.id)))


def new_game(variant_id: str, seed: int) -> State:
    """The opening position of ``variant_id`` for deal number ``seed``."""
    return get_variant(variant_id).deal(seed)
