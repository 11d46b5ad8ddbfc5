"""Looking for followed things that expired: an expiry publishes nothing on a game's
channel, so the hub asks Redis about each followed game every heartbeat round
(:meth:`service.live.channel.Channel.exists`; a day's board is trimmed by the worker long
after its day, and is not asked about)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("patience.feed")


class ExpiryCheck:
    """Each look runs in a thread of its own (one Redis round trip per game, while the
    subscription's thread keeps reading), one look at a time; ``gone`` is called with
    the name of each channel whose game no longer exists.  Nothing is asked once
    ``stopping()`` (the app is closing, and its store may be closed already)."""

    def __init__(self, *, gone: Callable[[str], None], stopping: Callable[[], bool]):
        self._gone = gone
        self._stopping = stopping
        self._thread: threading.Thread | None = None

    def look(self, channels: list) -> None:
        """Look for what the ``channels`` follow that expired, unless a look is under
        way."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._look, args=(channels,),
                                            name="events-expiry", daemon=True)
            self._thread.start()

    def _look(self, channels: list) -> None:
        try:
            for channel in channels:
                if self._stopping():
                    return
                if not channel.exists():
                    self._gone(channel.name)
        except Exception as error:  # the next round looks again
            if not self._stopping():
                log.warning("events expiry check failed: %s: %s", type(error).__name__, error)
