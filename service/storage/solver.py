"""The Redis side of the solver's features: the pools of proved-winnable seeds, the
analysis jobs and the analyses kept with their games (key names: :mod:`.keys`).

Every command touches one key, so each works on a Redis Cluster as it does on one Redis:

- a pool (:func:`keys.pool`) is a SET of seeds in decimal.  A seed leaves it by ``SPOP``,
  atomically: two creations never get the same seed.  A pool is as secret as the stock
  of a game in play: no answer, log line or error ever names a seed of it;
- the job list (:data:`keys.ANALYSIS_JOBS`): ``RPUSH`` here, ``LPOP`` in the worker;
- the claim on an analysis (:func:`keys.analysis_claim`): ``SET NX`` with an expiry;
- the analysis itself: the field :data:`keys.ANALYSIS` of the game's hash, written once
  (``HSETNX``) and only while the game exists (:data:`.scripts.KEEP_ANALYSIS`), so that
  it goes with the game (expiry, delete).
"""

from __future__ import annotations

import math

import redis

from service.storage import keys
from service.storage.backend import Backend, Script
from service.storage.game_store import StorageUnavailable, storage_errors
from service.storage.scripts import KEEP_ANALYSIS

__all__ = ["SolverStore", "StorageUnavailable"]


_KEEP_ANALYSIS = Script(KEEP_ANALYSIS)


class SolverStore:
    """The commands above, on the Redis of ``backend`` (one Redis or a Redis Cluster,
    whose client the backend makes on first use): over its redis-py client, the script
    over its connections of the request path."""

    def __init__(self, backend: Backend):
        self.backend = backend

    @property
    def client(self) -> redis.Redis:
        return self.backend.client

    # --- pools ----------------------------------------------------------------------
    @storage_errors
    def take_seed(self, variant_id: str) -> int | None:
        """A proved-winnable seed of the variant, taken out of its pool (None: empty)."""
        seed = self.client.spop(keys.pool(variant_id))
        return None if seed is None else int(seed)

    @storage_errors
    def add_seed(self, variant_id: str, seed: int) -> None:
        self.client.sadd(keys.pool(variant_id), str(seed))

    @storage_errors
    def pool_size(self, variant_id: str) -> int:
        return int(self.client.scard(keys.pool(variant_id)))

    # --- analyses -------------------------------------------------------------------
    @storage_errors
    def analysis(self, game_id: str) -> bytes | None:
        return self.client.hget(keys.game(game_id), keys.ANALYSIS)

    @storage_errors
    def keep_analysis(self, game_id: str, answer: bytes) -> int:
        """Keep ``answer`` with the game unless it has one: 1 stored, 0 it had one
        already, -1 no such game."""
        return int(_KEEP_ANALYSIS.run(self.backend.connections, [keys.game(game_id)],
                                      [answer]))

    @storage_errors
    def claim_analysis(self, game_id: str, seconds: float) -> bool:
        """Whether this caller may compute the game's analysis (no one else is at it);
        the claim lapses after ``seconds`` if its holder never finishes."""
        return bool(self.client.set(keys.analysis_claim(game_id), "1", nx=True,
                                    ex=max(1, math.ceil(seconds))))

    @storage_errors
    def release_analysis(self, game_id: str) -> None:
        self.client.delete(keys.analysis_claim(game_id))

    @storage_errors
    def queue_analysis(self, game_id: str) -> None:
        self.client.rpush(keys.ANALYSIS_JOBS, game_id)

    @storage_errors
    def next_analysis(self) -> str | None:
        """The next game whose analysis is to be computed (None: no job)."""
        found = self.client.lpop(keys.ANALYSIS_JOBS)
        return None if found is None else found.decode()
