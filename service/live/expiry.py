"""Looking for followed games that expired: an expiry publishes nothing on a game's
channel, so the hub asks Redis about each followed game every heartbeat round."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from service.storage.game_store import GameStore

log = logging.getLogger("patience.feed")


class ExpiryCheck:
    """Each look runs in a thread of its own (one Redis round trip per game, while the
    subscription's thread keeps reading), one look at a time; ``gone`` is called with
    each game that no longer exists.  Nothing is asked once ``stopping()`` (the app is
    closing, and its store may be closed already)."""

    def __init__(self, store: GameStore, *, gone: Callable[[str], None],
                 stopping: Callable[[], bool]):
        self.store = store
        self._gone = gone
        self._stopping = stopping
        self._thread: threading.Thread | None = None

    def look(self, game_ids: list[str]) -> None:
        """Look for the games of ``game_ids`` that expired, unless a look is under way."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._look, args=(game_ids,),
                                            name="events-expiry", daemon=True)
            self._thread.start()

    def _look(self, game_ids: list[str]) -> None:
        try:
            for game_id in game_ids:
                if self._stopping():
                    return
                if not self.store.exists(game_id):
                    self._gone(game_id)
        except Exception as error:  # the next round looks again
            if not self._stopping():
                log.warning("events expiry check failed: %s: %s", type(error).__name__, error)
