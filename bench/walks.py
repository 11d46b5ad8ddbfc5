"""Long sequences of legal moves, computed with the engine, for the HTTP benchmark.

A *walk* plays deal ``seed`` of a variant by random legal moves that never end the game
(a move that would win or lose it is skipped; resign is never played).  Most deals get
stuck after about a hundred moves, but some reach a position where a card can go back
and forth for ever (twin cards married in turn, a card shuttled between bare kings): those
walks are as long as asked, every move legal, every one a new version of the game.  The
benchmark creates the game with the same variant and seed and sends the walk's moves in
order, so no request is ever refused and nothing can be answered from a cache.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from service.engine import get_variant, variants

#: Every variant the engine registers, in its order.
VARIANT_IDS: tuple[str, ...] = tuple(variant.id for variant in variants())


@dataclass(frozen=True)
class Walk:
    variant: str
    seed: int
    moves: tuple[dict, ...]  # Move objects as the API takes them, in order


def walk(variant_id: str, seed: int, length: int) -> Walk:
    """Up to ``length`` legal moves of deal ``seed`` that keep the game in play."""
    rng = random.Random(f"walk:{variant_id}:{seed}")
    state = get_variant(variant_id).deal(seed)
    moves = []
    while len(moves) < length:
        legal = state.legal_moves()
        rng.shuffle(legal)
        for move in legal:
            after, _step = state.apply(move)
            if not after.is_over:
                break
        else:
            break  # every move ends the game (or there is none): stop before it
        moves.append(move.to_dict())
        state = after
    return Walk(variant_id, seed, tuple(moves))


def long_walks(variant_ids: list[str], count: int, length: int, *, first_seed: int = 1
               ) -> list[Walk]:
    """``count`` walks of exactly ``length`` moves, the variants taken in turn."""
    found: list[Walk] = []
    next_seed = dict.fromkeys(variant_ids, first_seed)
    while len(found) < count:
        variant_id = variant_ids[len(found) % len(variant_ids)]
        while True:
            seed = next_seed[variant_id]
            next_seed[variant_id] += 1
            candidate = walk(variant_id, seed, length)
            if len(candidate.moves) == length:
                found.append(candidate)
                break
    return found
