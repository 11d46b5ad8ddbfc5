"""The NDJSON export of a player's games, timed, and the resident memory of the
gunicorn processes while it is served.

Before each export every process of gunicorn (master and request processes) is read
from ``/proc/<pid>/status`` (``VmRSS``), and its peak (``VmHWM``) is set back to its
current RSS (``/proc/<pid>/clear_refs``, ``5``) where the kernel lets it; a thread reads
``VmRSS`` every few milliseconds while the body comes in; after it, ``VmRSS`` and
``VmHWM`` again.  A process's growth is its highest RSS seen (sampled, or its peak when
it could be reset) less its RSS before: the process that served the export is the one
that grew most, and that growth is what the export cost it (its allocator may keep
some of it after; ``retained`` says how much)."""

from __future__ import annotations

import contextlib
import http.client
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.http.constants import HOST
from devtools.processes import children

NDJSON = "application/x-ndjson"
#: How often the sampler reads the processes' RSS while an export is served.
SAMPLE_SECONDS = 0.005


def status_kib(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of ``pid`` in KiB (empty if it is gone)."""
    found = {}
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                found[line.split(":", 1)[0]] = int(line.split()[1])
    return found


def reset_peak(pid: int) -> bool:
    """Set ``VmHWM`` back to the current RSS (Linux 4.0 and later); False if refused."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@dataclass
class Export:
    games: int  # lines received
    bytes: int
    seconds: float  # from the request sent to the last byte
    pid: int  # the process that grew most
    before_kib: int  # its RSS before
    peak_kib: int  # its highest RSS while serving (sampled, or VmHWM)
    after_kib: int  # its RSS after
    peak_from: str  # "VmHWM" (reset before) or "sampled"

    @property
    def rate(self) -> float:
        return self.games / self.seconds if self.seconds else 0.0

    @property
    def growth_mb(self) -> float:
        """The growth at the peak, in MB (10^6 bytes)."""
        return (self.peak_kib - self.before_kib) * 1024 / 1e6

    @property
    def retained_mb(self) -> float:
        return (self.after_kib - self.before_kib) * 1024 / 1e6


def export(port: int, master: int, token: str) -> Export:
    """One ``GET /v1/players/me/games`` with ``Accept: application/x-ndjson``, read to
    its end, and the memory of gunicorn's processes meanwhile."""
    pids = [master, *children(master)]
    before = {pid: status_kib(pid).get("VmRSS", 0) for pid in pids}
    resets = [reset_peak(pid) for pid in pids]  # every one, whatever the first says
    peaks_reset = all(resets)
    sampled = dict(before)
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for pid in pids:
                rss = status_kib(pid).get("VmRSS", 0)
                if rss > sampled[pid]:
                    sampled[pid] = rss
            time.sleep(SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    connection = http.client.HTTPConnection(HOST, port, timeout=120)
    try:
        started = time.monotonic()
        connection.request("GET", "/v1/players/me/games",
                           headers={"Authorization": f"Bearer {token}", "Accept": NDJSON})
        response = connection.getresponse()
        if response.status != 200 or not response.getheader("Content-Type", "")\
                .startswith(NDJSON):
            raise RuntimeError(f"the export answered {response.status} "
                               f"{response.getheader('Content-Type')}: "
                               f"{response.read(300)!r}")
        lines = size = 0
        while chunk := response.read(65536):
            lines += chunk.count(b"\n")
            size += len(chunk)
        seconds = time.monotonic() - started
    finally:
        connection.close()
        stop.set()
        sampler.join()
    after = {pid: status_kib(pid) for pid in pids}
    peaks = {pid: max(sampled[pid], after[pid].get("VmHWM", 0) if peaks_reset else 0)
             for pid in pids}
    served = max(pids, key=lambda pid: peaks[pid] - before[pid])
    return Export(lines, size, seconds, served, before[served], peaks[served],
                  after[served].get("VmRSS", 0), "VmHWM" if peaks_reset else "sampled")
