"""The daily deal and its boards (docs/daily.md), between the live feed and the solver
above and the players below:

- :mod:`.calendar`: the days (``DAILY_PERIOD_SECONDS``, ``DAILY_OFFSET_SECONDS``), pure;
- :mod:`.boards`: :class:`~.boards.Daily`, the day's deal, the ranked attempts, the
  projection of a ranked game's end onto its day's board, the boards' reads and the
  close of a day.
"""
