"""A rolling upgrade from the version whose day's boards hold the player alone: that
version's own code (its ``service`` package, exported from git) reads a board this
version writes with ``DAILY_BOARD_FORM=players``, and this version reads what it writes.

The older version runs in a process of its own (its package first on the path), on the
same Redis (one Redis and the cluster), as its replicas would during the upgrade."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import orjson
import pytest

from tests.api.test_daily import board_keys, board_player, lost_ends, lost_payload

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
#: The last version of ``main`` whose day's boards hold the player alone as the member
#: and the entry in the entries hash (the form ``DAILY_BOARD_FORM=players`` writes).
OLDER_VERSION = "bb0f899"

#: Run by the older version: reads each board named on its standard input through its
#: own app, and writes the ranked ends it is given through its own board's script.
OLDER_PROCESS = r"""
import json, os, sys
from service.app import create_app

job = json.load(sys.stdin)
app = create_app({"TESTING": True, "REDIS_URL": job["redis_url"],
                  "RATELIMIT_ENABLED": False, "DAILY_ACCOUNT_RULE": "any"})
daily = app.services.daily
if job["ends"]:
    daily.store.project_many([daily._end(game_id, data, name)
                              for game_id, data, name in job["ends"]], live_top=3)
client = app.test_client()
reads = []
for path, query in job["reads"]:
    response = client.get(path, query_string=query)
    reads.append([response.status_code, response.get_json()])
sys.stdout.write(json.dumps(reads))
sys.stdout.flush()
os._exit(0)
"""


@pytest.fixture(scope="module")
def older_version(tmp_path_factory) -> Path:
    """The older version's ``service`` package, exported from the repository's history."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar",
                              OLDER_VERSION, "service"], capture_output=True, timeout=60,
                             check=True).stdout
    where = tmp_path_factory.mktemp("older-version")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # The "data" filter where the interpreter has one (3.11.4 and later).
        tar.extractall(where, **({"filter": "data"} if hasattr(tarfile, "data_filter")
                                 else {}))
    return where


def older_reads(where: Path, redis_url: str, reads: list, ends: list = ()) -> list:
    """``reads`` (path, query) answered by the older version's app, after it wrote
    ``ends`` (game id, the ``ranked-ended`` event's data, the player's name)."""
    result = subprocess.run(
        [sys.executable, "-c", OLDER_PROCESS], cwd=where, capture_output=True, timeout=120,
        input=json.dumps({"redis_url": redis_url, "reads": reads, "ends": list(ends)}),
        text=True, env={**os.environ, "PYTHONPATH": str(where), "LOG_LEVEL": "WARNING"})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def board_reads(day: str, players: list[str]) -> list:
    """A day's Clock board's first page, and each player's rank with the 2 either side."""
    reads = [(f"/v1/daily/clock/{day}/board", {"limit": 100})]
    reads += [(f"/v1/daily/clock/{day}/board/players/{player}", {"around": 2})
              for player in players]
    return reads


def newer_reads(client, reads: list) -> list:
    answers = []
    for path, query in reads:
        response = client.get(path, query_string=query)
        answers.append([response.status_code, response.get_json()])
    return answers


def lost(daily, day: int, number: int, score: int) -> tuple[str, dict, str]:
    """A lost ranked end as the older version's ``Daily._end`` takes it: the game's id,
    the event's data, the player's name (player ``n`` as :func:`lost_ends` makes it)."""
    return f"g{number}", lost_payload(daily.calendar, day, board_player(number), score), \
        f"P{number}"


def test_the_older_version_reads_the_older_form_this_version_writes(
        daily_app, redis_db, redis_url, older_version):
    """With ``DAILY_BOARD_FORM=players`` the older version answers every read of a
    board this version wrote as this version does (its page, and each player's rank
    with the players around), and this version reads an end the older version wrote
    among them, in its place; an end the older version writes again is not written
    twice.  Written in the form 'entries', the older version cannot read the board (its
    page lacks the entries' fields): what the setting is for."""
    newer = daily_app(DAILY_BOARD_FORM="players")
    client = newer.test_client()
    daily = newer.services.daily
    index = daily.today()
    day = daily.calendar.day_id(index)
    scores = [5, 3, 3, 9, 3, 1, 7, 7]
    players = lost_ends(daily, day, index, scores)
    reads = board_reads(day, players)
    answers = newer_reads(client, reads)
    assert [status for status, _body in answers] == [200] * len(reads)
    assert older_reads(older_version, redis_url, reads) == answers

    # The older version writes an end (a tie of score 3) and one already written.
    before = board_keys(redis_db, "clock", day)
    added = board_player(len(scores))
    ends = [lost(daily, index, len(scores), 3), lost(daily, index, 1, 3)]
    reads = board_reads(day, [*players, added])
    answers = older_reads(older_version, redis_url, reads, ends)
    assert newer_reads(client, reads) == answers
    assert answers[0][1]["count"] == len(scores) + 1
    order = sorted([*zip(scores, players, strict=True), (3, added)])
    assert [row["player_id"] for row in answers[0][1]["entries"]] == \
        [player for _score, player in order]
    after = board_keys(redis_db, "clock", day)
    assert orjson.loads(after[1].pop(added.encode())) == \
        orjson.loads(daily._end(*lost(daily, index, len(scores), 3))["entry"])
    assert after[1] == before[1]  # the end written again: nothing changed

    # The form 'entries': the older version's page of it lacks the entries' fields.
    entries_form = daily_app()
    yesterday = daily.calendar.day_id(index - 1)
    lost_ends(entries_form.services.daily, yesterday, index - 1, scores)
    (status, page), = older_reads(older_version, redis_url,
                                  [(f"/v1/daily/clock/{yesterday}/board", {"limit": 100})])
    assert status == 200
    assert page["count"] == len(scores)
    assert page["entries"] != newer_reads(entries_form.test_client(), [
        (f"/v1/daily/clock/{yesterday}/board", {"limit": 100})])[0][1]["entries"]
