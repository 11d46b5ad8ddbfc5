"""The days of the daily deal, as pure functions of a time in milliseconds.

Day ``k`` spans ``[k * period + offset, (k + 1) * period + offset)`` seconds since 1970
(``DAILY_PERIOD_SECONDS``, ``DAILY_OFFSET_SECONDS``).  A day's id is the UTC date of its
start, ``YYYY-MM-DD``; with a period shorter than a day (tests), the time of its start
too, ``YYYY-MM-DDTHHMMSS``, so that every day has an id of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

_DAY = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:T([0-9]{2})([0-9]{2})([0-9]{2}))?")
SECONDS_A_DAY = 86400


@dataclass(frozen=True, slots=True)
class Calendar:
    period: int = SECONDS_A_DAY
    offset: int = 0

    def __post_init__(self):
        if self.period < 1:
            raise ValueError("DAILY_PERIOD_SECONDS must be at least 1")

    def index(self, at_ms: int) -> int:
        """The day that ``at_ms`` falls in."""
        return (at_ms // 1000 - self.offset) // self.period

    def start_ms(self, day: int) -> int:
        return (day * self.period + self.offset) * 1000

    def end_ms(self, day: int) -> int:
        return self.start_ms(day + 1)

    def day_id(self, day: int) -> str:
        start = datetime.fromtimestamp(self.start_ms(day) // 1000, UTC)
        if self.period % SECONDS_A_DAY == 0:
            return start.strftime("%Y-%m-%d")
        return start.strftime("%Y-%m-%dT%H%M%S")

    def parse(self, text: str) -> int | None:
        """The day whose id is ``text`` (None: no day has it); the last ids asked for
        are remembered (a board's reads name the same few days)."""
        return _parse(self, text)

    def week_id(self, day: int) -> str:
        """The ISO week of the day's start, ``YYYY-Www``."""
        year, week, _ = datetime.fromtimestamp(self.start_ms(day) // 1000, UTC).isocalendar()
        return f"{year}-W{week:02d}"


@lru_cache(maxsize=1024)
def _parse(calendar: Calendar, text: str) -> int | None:
    found = _DAY.fullmatch(text)
    if found is None:
        return None
    try:
        year, month, mday = (int(found[i]) for i in (1, 2, 3))
        hour, minute, second = (int(found[i] or 0) for i in (4, 5, 6))
        start = datetime(year, month, mday, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None
    seconds = int(start.timestamp())
    if calendar.period % SECONDS_A_DAY == 0:
        day = (seconds - calendar.offset) // calendar.period
        # A date names the day that starts on it.
        return day if calendar.day_id(day) == text else (
            day + 1 if calendar.day_id(day + 1) == text else None)
    if (seconds - calendar.offset) % calendar.period:
        return None
    day = (seconds - calendar.offset) // calendar.period
    return day if calendar.day_id(day) == text else None
