"""The composition root: every service object of a process, built once from the settings.

:func:`build_services` takes the settings mapping (what :func:`service.config.read_config`
returns, with the app's overrides) and makes, in order: the storage backend (one Redis
or a Redis Cluster, chosen from ``REDIS_URL``: :func:`service.storage.backend.open_backend`)
with the game repository on it (:func:`service.game.application.open_store`), the solver's
store, the solver's parts (the winnable
deals, handed to :class:`~service.game.application.Games` through the game layer's own
interface, and the analyses), the players (their store, the projection of owned games
handed to ``Games`` the same way, and the accounts), the events feed, and the OpenAPI
document.  The Flask app
(:mod:`service.app`) holds the result as ``app.services`` (the views reach it by
:func:`service.api.context.services`); the solver's worker
(:mod:`service.solver.worker`) builds only the stores and the analyses, without Flask
and without this module.

:meth:`Services.close` closes the events feed first (its hub reads the store), then the
backend's connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from service.daily.boards import Daily, daily_of
from service.game.application import Games, open_store
from service.game.record import StoredGame
from service.live.feed import EventsFeed
from service.players.accounts import Players
from service.players.oidc import verifier_from_config
from service.players.projection import Projector, projector_of
from service.solver.features import Analyses, SolverSettings, Winnable
from service.storage.backend import Backend
from service.storage.connections import Connections
from service.storage.game_store import GameStore
from service.storage.solver import SolverStore

__all__ = ["Services", "build_services"]


@dataclass(frozen=True, slots=True)
class Services:
    """The service objects of an app's process."""

    backend: Backend
    store: GameStore[StoredGame]
    solver_store: SolverStore
    games: Games
    players: Players
    daily: Daily
    projector: Projector
    analyses: Analyses
    events_feed: EventsFeed
    #: The OpenAPI document (``OPENAPI_PATH``), None if it cannot be read.
    openapi_yaml: bytes | None

    @property
    def limiter_connections(self) -> Connections:
        """The connections the rate limiter's counters use when they live in the games'
        Redis (:mod:`service.storage.rate_limits`): the request path's."""
        return self.backend.connections

    def close(self) -> None:
        """Close the events feed (its hub reads the store), then the backend."""
        self.events_feed.close()
        self.backend.close()


def build_services(config: Mapping) -> Services:
    """Every service object of an app, from the settings (``SECRET_KEY`` set)."""
    store = open_store(config)
    backend = store.backend
    solver_store = SolverStore(backend)
    solver_settings = SolverSettings.from_config(config)
    projector = projector_of(store)
    games = Games(store, secret_key=config["SECRET_KEY"], retries=config["WRITE_RETRIES"],
                  hint_seconds=config["HINT_SECONDS"],
                  winnable=Winnable(solver_store, solver_settings), projection=projector)
    # The daily boards follow the ranked games' ends through the same projection.
    daily = daily_of(config, games, projector, solver_store,
                     search=Winnable(solver_store, solver_settings).search)
    # OpenID Connect: with OIDC_ISSUER set, the verifier of its tokens (called by
    # Players.identify alone).
    verifier = verifier_from_config(config)
    return Services(
        backend=backend,
        store=store,
        solver_store=solver_store,
        games=games,
        players=Players(projector.players, games, verifier=verifier),
        daily=daily,
        projector=projector,
        analyses=Analyses(store, solver_store, solver_settings),
        events_feed=EventsFeed(store, backend.subscriber(), config),
        openapi_yaml=_read_openapi(config["OPENAPI_PATH"]),
    )


def _read_openapi(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None
