"""The Redis side of the solver's features: the pools of proved-winnable seeds, the
analysis jobs and the analyses stored with their games.

Keys (each command touches one key, so every one works on a Redis Cluster as well):

- ``pool:{<variant>}`` SET: seeds (decimal) that the solver proved winnable, not dealt
  yet.  A seed leaves the pool by ``SPOP``, atomically: two creations never get the same
  seed.  The pool is as secret as the stock of a game in play: no answer, log line or
  error ever names a seed of it;
- ``analysis:jobs`` LIST: ids of finished games whose analysis the worker computes
  (``RPUSH`` here, ``BLPOP`` in the worker);
- ``game:{<id>}:analysing`` STRING with an expiry: held while one analysis of the game is
  under way, so that it is computed once (the next request answers 202 meanwhile);
- the field ``a`` of the game's hash ``game:{<id>}``: the analysis, as its JSON answer,
  written once (``HSETNX``) and only while the game exists, so that it goes with the
  game (expiry, delete).
"""

from __future__ import annotations

import redis

from service.store import StorageUnavailable, _storage_errors

__all__ = ["SolverStore", "StorageUnavailable", "analysis_lock_key", "pool_key"]

ANALYSIS_JOBS = "analysis:jobs"
#: The field of the game's hash that holds its analysis.
ANALYSIS_FIELD = "a"

# KEYS: the game hash.  ARGV: the analysis JSON.  1 if stored now, 0 if one was stored
# already, -1 if the game does not exist (deleted or expired meanwhile).
_STORE_ANALYSIS = """
if redis.call('HEXISTS', KEYS[1], 'v') == 0 then return -1 end
return redis.call('HSETNX', KEYS[1], 'a', ARGV[1])
"""


def pool_key(variant_id: str) -> str:
    return f"pool:{{{variant_id}}}"


def _game_key(game_id: str) -> str:
    return f"game:{{{game_id}}}"


def analysis_lock_key(game_id: str) -> str:
    return f"game:{{{game_id}}}:analysing"


class SolverStore:
    """The commands above, on one redis-py client (a worker's, or the app's)."""

    def __init__(self, client: redis.Redis):
        self.client = client
        self._store_analysis = client.register_script(_STORE_ANALYSIS)

    # --- pools ----------------------------------------------------------------------
    @_storage_errors
    def take_seed(self, variant_id: str) -> int | None:
        """A proved-winnable seed of the variant, removed from its pool (None if empty)."""
        seed = self.client.spop(pool_key(variant_id))
        return None if seed is None else int(seed)

    @_storage_errors
    def add_seed(self, variant_id: str, seed: int) -> None:
        self.client.sadd(pool_key(variant_id), str(seed))

    @_storage_errors
    def pool_sizes(self, variant_ids) -> dict[str, int]:
        pipe = self.client.pipeline(transaction=False)
        for variant_id in variant_ids:
            pipe.scard(pool_key(variant_id))
        return dict(zip(variant_ids, pipe.execute(), strict=True))

    # --- analyses -------------------------------------------------------------------
    @_storage_errors
    def analysis(self, game_id: str) -> bytes | None:
        return self.client.hget(_game_key(game_id), ANALYSIS_FIELD)

    @_storage_errors
    def store_analysis(self, game_id: str, answer: bytes) -> int:
        """Keep ``answer`` with the game unless it has one: 1 stored, 0 already had one,
        -1 no such game."""
        return int(self._store_analysis(keys=[_game_key(game_id)], args=[answer]))

    @_storage_errors
    def claim_analysis(self, game_id: str, seconds: float) -> bool:
        """Whether this caller may compute the game's analysis (no one else is at it);
        the claim lapses after ``seconds`` if its holder never finishes."""
        return bool(self.client.set(analysis_lock_key(game_id), "1", nx=True,
                                    ex=max(1, int(seconds + 0.999))))

    @_storage_errors
    def release_analysis(self, game_id: str) -> None:
        self.client.delete(analysis_lock_key(game_id))

    @_storage_errors
    def queue_analysis(self, game_id: str) -> None:
        self.client.rpush(ANALYSIS_JOBS, game_id)

    @_storage_errors
    def next_analysis(self, wait: float) -> str | None:
        """The next game to analyse, waiting up to ``wait`` seconds (0: do not wait)."""
        if wait <= 0:
            found = self.client.lpop(ANALYSIS_JOBS)
            return None if found is None else found.decode()
        found = self.client.blpop([ANALYSIS_JOBS], timeout=wait)
        return None if found is None else found[1].decode()
