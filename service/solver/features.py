"""Winnable deals and the analysis of a finished deal: the service side of the solver
(:mod:`service.engine.search`).

Winnable deals.  ``POST /v1/games`` with ``"winnable": true`` deals a seed that the
solver proved winnable.  The seeds come from a pool per variant in Redis
(:class:`service.storage.solver.SolverStore`), which the worker process
(:mod:`service.solver.worker`) keeps filled: it draws seeds from the operating system's CSPRNG
(:func:`secrets.randbits`), solves each and keeps the ones it wins.  A seed is taken out
of the pool atomically when a game is dealt from it, and is as secret as any seed the
server chooses.  When the pool of the variant is empty, the creation searches itself
for up to ``WINNABLE_SEARCH_SECONDS`` (:func:`find_winnable`); nothing found in that time
answers 422 ``no_winnable_deal`` (Four Corners, whose deals the solver seldom proves
winnable).

Analysis.  Once a game is over, ``GET /v1/games/<id>/analysis`` answers whether its deal
could be won, with a winning line from the deal.  The first request that finds no stored
analysis claims the game (a Redis key with an expiry), searches for up to
``ANALYSIS_INLINE_SECONDS`` itself, and keeps a settled answer (won or proved lost) with
the game; an undecided one goes to the worker, which searches with the whole budget
(``ANALYSIS_SECONDS``, ``ANALYSIS_POSITIONS``) and keeps its answer, whatever it is.
Meanwhile the endpoint answers 202 with ``Retry-After``.  An analysis is stored once
(``HSETNX``) and never computed again.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from service.engine import WON, Variant, get_variant
from service.engine import search as engine_solver
from service.engine.search import Outcome
from service.game.application import check_analysable
from service.game.errors import game_not_found, game_not_over, no_winnable_deal
from service.storage.game_store import GameStore
from service.storage.solver import SolverStore

#: Seconds a client is asked to wait before it asks again for an analysis under way.
ANALYSIS_RETRY_AFTER = 1


@dataclass(frozen=True, slots=True)
class SolverSettings:
    """The budgets of the solver's features (settings of :mod:`service.config`)."""

    #: Proved-winnable seeds the worker keeps per variant (absent or 0: none).
    pool: dict[str, int]
    #: Seconds (of the worker's CPU time) and positions the worker gives one deal while
    #: it fills a pool.
    deal_seconds: float = 10.0
    deal_positions: int = 50_000
    #: The worker's CPU share: the CPU time it may use on average, a fraction of one core.
    cpu_share: float = 0.02
    #: Seconds a creation with ``winnable`` searches when the pool is empty.
    search_seconds: float = 1.5
    #: The analysis: the whole budget (the worker), and the part a request tries first.
    analysis_seconds: float = 10.0
    analysis_positions: int = engine_solver.DEFAULT_POSITIONS
    analysis_inline_seconds: float = 0.5

    @classmethod
    def from_config(cls, config) -> SolverSettings:
        return cls(
            pool=parse_pool(config["WINNABLE_POOL"]),
            deal_seconds=float(config["WINNABLE_DEAL_SECONDS"]),
            deal_positions=int(config["WINNABLE_DEAL_POSITIONS"]),
            cpu_share=cpu_share(config["WORKER_CPU_SHARE"]),
            search_seconds=float(config["WINNABLE_SEARCH_SECONDS"]),
            analysis_seconds=float(config["ANALYSIS_SECONDS"]),
            analysis_positions=int(config["ANALYSIS_POSITIONS"]),
            analysis_inline_seconds=float(config["ANALYSIS_INLINE_SECONDS"]),
        )

    @property
    def claim_seconds(self) -> float:
        """How long a claim on an analysis holds: past it, a holder that died (a worker
        stopped in the middle) no longer blocks the next request from queueing it again."""
        return self.analysis_inline_seconds + self.analysis_seconds + 60.0


def parse_pool(text: str) -> dict[str, int]:
    """``"clock=32,salic-law=32,four-corners=4"`` as ``{variant: size}``; a variant
    left out gets no pool.  ``ValueError`` on an unknown variant or a bad size."""
    sizes: dict[str, int] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, size = part.partition("=")
        name = name.strip()
        try:
            get_variant(name)
            count = int(size)
        except Exception:
            raise ValueError(f"WINNABLE_POOL: {part!r} is not <variant>=<size>") from None
        if not sep or count < 0:
            raise ValueError(f"WINNABLE_POOL: {part!r} is not <variant>=<size>")
        sizes[name] = count
    return sizes


def cpu_share(value) -> float:
    """``WORKER_CPU_SHARE`` checked: a fraction of one core, more than 0, at most 1."""
    share = float(value)
    if not 0 < share <= 1:
        raise ValueError(f"WORKER_CPU_SHARE must be more than 0 and at most 1, not {value!r}")
    return share


def random_seed() -> int:
    """A deal number from the operating system's CSPRNG (0 .. 2**64-1)."""
    return secrets.randbits(64)


def try_deal(variant: Variant, *, seconds: float, positions: int,
             clock: Callable[[], float] = engine_solver.WALL_CLOCK) -> int | None:
    """One random deal of ``variant``, searched once within ``positions`` and
    ``seconds``: its seed if the solver wins it, else None.  The seconds are read on
    ``clock`` (the wall clock; the worker gives its CPU time)."""
    seed = random_seed()
    solution = engine_solver.solve(variant, seed, max_positions=positions,
                                   max_seconds=seconds, clock=clock)
    return seed if solution.result == Outcome.WON else None


def find_winnable(variant: Variant, *, seconds: float, deal_seconds: float,
                  positions: int) -> int | None:
    """A random seed of ``variant`` that the solver proves winnable, searching deal after
    deal (:func:`try_deal`) for up to ``seconds`` in all and ``deal_seconds`` per deal;
    None if none was found in time."""
    clock = engine_solver.WALL_CLOCK  # a request waits for it
    deadline = clock() + seconds
    while (left := deadline - clock()) > 0:
        seed = try_deal(variant, seconds=min(left, deal_seconds), positions=positions)
        if seed is not None:
            return seed
    return None


def analysis_json(variant: Variant, seed: int, solution: engine_solver.Solution) -> dict:
    """The Analysis of the API: ``winnable`` true (won), false (proved lost) or null
    (undecided); ``line`` the winning line from the deal, each move as ``GET .../moves``
    lists it (a card move names its card), replayed through the engine on the way."""
    line = None
    if solution.result == Outcome.WON:
        state = variant.deal(seed)
        line = []
        for step in solution.line:
            listed = step.move.to_dict()
            card = state.card_of(step.move)
            if card is not None:
                listed["card"] = str(card)
            line.append(listed)
            state, _step = state.apply(step.move)
        if state.status != WON:
            raise RuntimeError(f"the winning line of {variant.id} deal ends {state.status}")
    return {
        "winnable": {Outcome.WON: True, Outcome.LOST: False}.get(solution.result),
        "line": line,
        "searched": solution.searched,
        "seconds": round(solution.seconds, 3),
    }


def analyse(variant: Variant, seed: int, *, seconds: float, positions: int,
            clock: Callable[[], float] = engine_solver.WALL_CLOCK
            ) -> tuple[engine_solver.Solution, bytes]:
    """Search the deal from its opening position: the solution and its Analysis JSON
    (the seconds read on ``clock``)."""
    solution = engine_solver.solve(variant, seed, max_positions=positions,
                                   max_seconds=seconds, clock=clock)
    return solution, orjson.dumps(analysis_json(variant, seed, solution))


#: The answers of :meth:`Analyses.get`.
READY, PENDING = "ready", "pending"


class Analyses:
    """Analyses of finished games, for the API (:meth:`get`) and the worker
    (:meth:`run`): the games come from the game repository, the analyses, claims and
    jobs from the :class:`SolverStore`."""

    def __init__(self, games: GameStore, store: SolverStore, settings: SolverSettings):
        self.games = games
        self.store = store
        self.settings = settings

    def get(self, game_id: str, before_search: Callable[[], None] | None = None
            ) -> tuple[str, bytes | None]:
        """``(READY, answer)`` or ``(PENDING, None)``; 404 ``game_not_found``, and 409
        ``game_not_over`` while the game is played (the answer would tell the stock).
        ``before_search`` is called before a search of ``ANALYSIS_INLINE_SECONDS``."""
        game = self.games.load(game_id)
        if game is None:
            raise game_not_found(game_id)
        check_analysable(game)
        if not game.record.is_over:
            raise game_not_over()
        stored = self.store.analysis(game_id)
        if stored is not None:
            return READY, stored
        if not self.store.claim_analysis(game_id, self.settings.claim_seconds):
            return PENDING, None  # a request or the worker is at it
        try:
            if self.settings.analysis_inline_seconds > 0:
                if before_search is not None:
                    before_search()
                solution, answer = analyse(
                    game.record.game_variant, game.record.seed,
                    seconds=min(self.settings.analysis_inline_seconds,
                                self.settings.analysis_seconds),
                    positions=self.settings.analysis_positions)
                if solution.result != Outcome.UNDECIDED:
                    return READY, self._keep(game_id, answer)
            self.store.queue_analysis(game_id)
        except BaseException:
            self.store.release_analysis(game_id)
            raise
        return PENDING, None

    def _keep(self, game_id: str, answer: bytes) -> bytes:
        """Store ``answer`` unless the game has one already (then that one is the
        answer), and release the claim."""
        try:
            if self.store.keep_analysis(game_id, answer) == 0:
                answer = self.store.analysis(game_id) or answer
        finally:
            self.store.release_analysis(game_id)
        return answer

    def run(self, game_id: str, *, clock: Callable[[], float] = engine_solver.WALL_CLOCK
            ) -> str:
        """The worker's part: compute and keep the analysis of ``game_id`` with the whole
        budget (its seconds read on ``clock``; the worker gives its CPU time), unless it is
        stored already or the game is gone.  Says what it did."""
        game = self.games.load(game_id)
        if game is None or not game.record.is_over:
            self.store.release_analysis(game_id)
            return "no finished game"
        if self.store.analysis(game_id) is not None:
            self.store.release_analysis(game_id)
            return "stored already"
        _solution, answer = analyse(game.record.game_variant, game.record.seed,
                                    seconds=self.settings.analysis_seconds,
                                    positions=self.settings.analysis_positions, clock=clock)
        self._keep(game_id, answer)
        return "stored"


class Winnable:
    """Where the seed of a ``"winnable": true`` creation comes from: the variant's pool,
    else a search of ``search_seconds`` at most."""

    def __init__(self, store: SolverStore, settings: SolverSettings):
        self.store = store
        self.settings = settings

    def seed(self, variant: Variant) -> int:
        seed = self.store.take_seed(variant.id)
        if seed is None:
            seed = self.search(variant)
        if seed is None:
            raise no_winnable_deal(variant.name)
        return seed

    def search(self, variant: Variant) -> int | None:
        """A seed proved winnable within ``search_seconds`` (None: none found)."""
        # A deal the solver wins is mostly won early: several short searches find one
        # more often than a single long one.
        seconds = self.settings.search_seconds
        return find_winnable(variant, seconds=seconds,
                             deal_seconds=min(seconds / 6, self.settings.deal_seconds),
                             positions=self.settings.deal_positions)
