"""Backup and restore of docker-compose.yml on a real Docker Engine, as
docs/deployment.md ("Backup and restore") tells the operator: deploy/backup.sh while
players play, a little more play, ``down -v`` (the volumes gone), deploy/restore.sh
(which starts the service again), then every move acknowledged before the backup began
is there, with its history, and the games go on with their tokens.  The same on
docker-compose.cluster.yml with deploy/cluster-backup.sh (a snapshot of every master) and
deploy/cluster-restore.sh (a new cluster, each snapshot's keys imported into it).
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.deploy.clients import (
    auth,
    create,
    run_players,
    salic_law_games,
    stop_players,
    summary,
    versions,
    writes_taken,
)
from tests.deploy.compose import ROOT, Deployment, up_on_a_free_network
from tests.deploy.conftest import deployment_env, project_name
from tests.deploy.figures import at_least, at_most, between, equal, record

pytestmark = pytest.mark.timeout(300)
SECTION = "backup and restore (docker-compose.yml)"
CLUSTER_SECTION = "backup and restore (docker-compose.cluster.yml)"
#: Seconds deploy/backup.sh may take on a few hundred games (about 1 to 2 s measured:
#: it waits for the next whole second, then the snapshot and its copy).
BACKUP_WITHIN = 15.0
#: Seconds deploy/restore.sh may take, the service's `up -d` included (not its start).
RESTORE_WITHIN = 60.0
#: Seconds deploy/cluster-backup.sh may take: three masters' snapshots at once and their
#: copies (3.9 and 5.1 s measured, 19.7 s at a load average of 32 on 2 cores).
CLUSTER_BACKUP_WITHIN = 45.0
#: Seconds deploy/cluster-restore.sh may take: nine nodes and cluster-init started, each
#: snapshot loaded and imported, then the service's `up -d`.
CLUSTER_RESTORE_WITHIN = 180.0
#: Seconds from `up` to GET /readyz answered (11 s and 22 s measured on 2 loaded cores).
UP_WITHIN = 120


def _run(deployment: Deployment, name: str, *args: str,
         **env: str) -> subprocess.CompletedProcess:
    """deploy/<name> run as the operator runs it, for this deployment."""
    env = {**deployment.env, "COMPOSE": " ".join(deployment.command),
           "COMPOSE_FILE": str(deployment.file), "COMPOSE_PROJECT_NAME": deployment.project,
           # The tests' image is built already: never again here.
           "RESTORE_UP_ARGS": "--no-build", **env}
    return subprocess.run([str(ROOT / "deploy" / name), *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT)


def _script(deployment: Deployment, name: str, *args: str) -> tuple[str, float]:
    """deploy/<name> run to success: its output and its seconds."""
    started = time.monotonic()
    result = _run(deployment, name, *args)
    seconds = round(time.monotonic() - started, 1)
    assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}"
    return result.stdout, seconds


class ClockPlayer(threading.Thread):
    """Plays Clock games one after another (never an undo: a game's history only grows)
    until ``stop`` is set; :attr:`acknowledged` is each game's version last answered 200."""

    def __init__(self, base: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.base, self.stop = base, stop
        self.tokens: dict[str, str] = {}
        self.acknowledged: dict[str, int] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with requests.Session() as session:
                seed = 100
                while not self.stop.is_set():
                    game_id, token = create(session, self.base, variant="clock", seed=seed)
                    self.tokens[game_id], self.acknowledged[game_id] = token, 0
                    self._play(session, game_id, token)
                    seed += 1
        except BaseException as error:  # the test reports it
            self.error = error

    def _play(self, session: requests.Session, game_id: str, token: str) -> None:
        version = 0
        while not self.stop.is_set():
            listing = session.get(f"{self.base}/v1/games/{game_id}/moves", timeout=10)
            assert listing.status_code == 200, listing.text
            moves = [move for move in listing.json()["moves"] if move["type"] != "resign"]
            if not moves:
                return
            answer = session.post(f"{self.base}/v1/games/{game_id}/moves", json=moves[0],
                                  headers=auth(token, **{"If-Match": f'"{version}"'}),
                                  timeout=10)
            assert answer.status_code == 200, answer.text
            game = answer.json()["game"]
            version = self.acknowledged[game_id] = game["version"]
            if game["status"] != "playing":
                return


def _histories(base: str, games: list[str]) -> dict[str, list[dict]]:
    with requests.Session() as session:
        found = {}
        for game_id in games:
            answer = session.get(f"{base}/v1/games/{game_id}/history", timeout=10)
            assert answer.status_code == 200, answer.text
            found[game_id] = answer.json()["moves"]
        return found


@pytest.fixture
def single(base_images, app_image):
    deployment = Deployment("docker-compose.yml", project_name("backup"),
                            deployment_env(base_images, app_image, WEB_CONCURRENCY="1"))
    try:
        deployment.up()
        base = f"http://{deployment.published('api', 8000)}"
        deployment.wait_ready(base)
        yield deployment, base
    finally:
        deployment.save_logs("deploy-backup.log")
        deployment.remove()


def _played_backed_up_and_restored(deployment: Deployment, base: str, tmp_path: Path,
                                   scripts: tuple[str, str], section: str,
                                   restarted, backup_within: float = BACKUP_WITHIN,
                                   restore_within: float = RESTORE_WITHIN) -> str:
    """Players play, deploy/<backup script> runs while they do, they play 1.5 s more;
    then `down -v` and deploy/<restore script>, and what came back is checked and
    recorded under ``section``: every move acknowledged before the backup began, none
    played after it, and every game taking its next move with its token.
    ``restarted(deployment)`` waits until the restored service takes writes, and gives
    its base URL.  Returns the note written beside the backup."""
    backup, restore = scripts
    with requests.Session() as session:
        games = salic_law_games(session, base, 6)
    stop, players = run_players(base, games, 2, pause=0.02)
    clock_stop = threading.Event()
    clock = ClockPlayer(base, clock_stop)
    clock.start()
    time.sleep(3.0)  # games under way

    # What was acknowledged before the backup began; then the backup, play going on.
    before = {game.id: game.acknowledged for game in games}
    before.update(clock.acknowledged.copy())  # a copy made at once: the player goes on
    output, backup_seconds = _script(deployment, backup, str(tmp_path))
    snapshot = Path(output.strip().splitlines()[-1])
    note = (snapshot / "note.txt" if snapshot.is_dir() else snapshot.with_suffix(".txt")
            ).read_text()
    time.sleep(1.5)  # play goes on after it

    clock_stop.set()
    clock.join(30)
    assert not clock.is_alive(), "the Clock player did not stop"
    assert clock.error is None, repr(clock.error)
    answers = stop_players(stop, players)
    tokens = {game.id: game.token for game in games} | clock.tokens
    played = versions(base, games) | clock.acknowledged
    histories = _histories(base, list(clock.tokens))

    # No restore while the service runs.
    refused_running = _run(deployment, restore, str(snapshot))
    assert refused_running.returncode != 0
    assert "stop the service first" in refused_running.stderr
    # The service stopped, its volumes destroyed.  No restore under another secret key
    # than the one of the snapshot's note; the restore starts the service again.
    deployment.down(volumes=True)
    other_key = tmp_path / "other_key"
    other_key.write_text("another key, not the snapshot's\n")
    refused_key = _run(deployment, restore, str(snapshot), SECRET_KEY_FILE=str(other_key))
    assert refused_key.returncode != 0
    assert "is not the secret key of" in refused_key.stderr
    _, restore_seconds = _script(deployment, restore, str(snapshot))
    started = time.monotonic()
    base = restarted(deployment)
    ready_seconds = round(time.monotonic() - started, 1)

    restored = {}
    with requests.Session() as session:
        for game_id in tokens:
            answer = session.get(f"{base}/v1/games/{game_id}", timeout=10)
            restored[game_id] = answer.json()["version"] if answer.status_code == 200 else None
    missing = sum(version - (restored[game_id] or 0) for game_id, version in before.items()
                  if (restored[game_id] or 0) < version)
    # A Clock game created once the backup began may be absent (it is, if created after
    # the snapshot): only the games of before must be there.
    absent = [game_id for game_id, version in restored.items()
              if version is None and game_id not in before]
    # A Clock game's history only grows: the restored one is the start of the one read
    # before `down`, up to the version restored.
    restored_histories = _histories(base, [g for g in clock.tokens if restored[g]])
    histories_differing = sum(
        restored_histories.get(game_id) != [entry for entry in history
                                            if entry["version"] <= (restored[game_id] or 0)]
        for game_id, history in histories.items() if game_id not in absent)

    # Each game goes on with its token: the next write on the version restored.
    refused = []
    with requests.Session() as session:
        for game_id, version in restored.items():
            if version is None:
                continue
            headers = auth(tokens[game_id], **{"If-Match": f'"{version}"'})
            if game_id in clock.tokens:
                game = session.get(f"{base}/v1/games/{game_id}", timeout=10).json()
                if game["status"] != "playing":
                    continue
                listing = session.get(f"{base}/v1/games/{game_id}/moves", timeout=10).json()
                moves = [m for m in listing["moves"] if m["type"] != "resign"]
                answer = session.post(f"{base}/v1/games/{game_id}/moves", json=moves[0],
                                      headers=headers, timeout=10)
            elif version % 2 == 0:  # after an undo (or none): a deal
                answer = session.post(f"{base}/v1/games/{game_id}/moves",
                                      json={"type": "deal"}, headers=headers, timeout=10)
            else:
                answer = session.post(f"{base}/v1/games/{game_id}/undo", headers=headers,
                                      timeout=10)
            if answer.status_code != 200 or answer.json()["game"]["version"] != version + 1:
                refused.append(f"{game_id}: {answer.status_code} {answer.text[:200]}")

    acknowledged = sum(before.values())
    record(
        section, detail=refused[:5] or summary(answers)["other_failures"],
        games=(len(tokens), at_least(len(games) + 1)),
        # The players' requests, the backup's included: every one answered 200.
        requests_while_playing=(len(answers), at_least(50)),
        requests_failed_while_playing=(summary(answers)["failed"], equal(0)),
        requests_sent_again_while_playing=(summary(answers)["sent_again"], equal(0)),
        moves_acknowledged_before_the_backup=(acknowledged, at_least(20)),
        moves_acknowledged_in_all=(sum(played.values()), at_least(acknowledged)),
        games_missing_after_restore=(sum(restored[g] is None for g in before), equal(0)),
        games_created_after_the_backup_began_absent=(len(absent), between(0, 2)),
        moves_missing_after_restore=(missing, equal(0)),
        games_restored_past_their_last_move=(
            sum((restored[g] or 0) > played[g] for g in played), equal(0)),
        clock_histories_differing=(histories_differing, equal(0)),
        games_refusing_their_next_move=(len(refused), equal(0)),
        backup_s=(backup_seconds, at_most(backup_within)),
        restore_s=(restore_seconds, at_most(restore_within)),
        restore_to_ready_s=(ready_seconds, at_most(UP_WITHIN)),
        moves_played_after_the_backup_began=(
            sum(played.values()) - acknowledged, between(1, 100000)),
        # The volumes were destroyed: what is back came from the snapshot, so the moves
        # played after it are not.
        moves_played_after_the_snapshot_not_restored=(
            sum(played[g] - (restored[g] or 0) for g in played), at_least(1)))
    assert "Secret key (sha256 of the file): " in note
    assert "unknown" not in note
    return note


def test_a_backup_taken_during_play_restores_every_move_acknowledged_before_it(
        single, tmp_path: Path):
    deployment, base = single

    def restarted(deployment: Deployment) -> str:
        base = f"http://{deployment.published('api', 8000)}"
        deployment.wait_ready(base)
        return base

    _played_backed_up_and_restored(deployment, base, tmp_path, ("backup.sh", "restore.sh"),
                                   SECTION, restarted)


@pytest.fixture
def cluster(base_images, app_image):
    """docker-compose.cluster.yml up, every shard taking writes through the load
    balancer."""
    deployment, _prefix = up_on_a_free_network(
        "docker-compose.cluster.yml", project_name("cluster-backup"),
        lambda prefix: deployment_env(base_images, app_image, WEB_CONCURRENCY="1",
                                      REDIS_NETWORK=prefix))
    try:
        yield deployment, _taking_writes(deployment)
    finally:
        deployment.save_logs("deploy-cluster-backup.log")
        deployment.remove()


def _taking_writes(deployment: Deployment) -> str:
    """The load balancer's base URL, once creates are taken by every shard through it."""
    base = f"http://{deployment.published('lb', 8000)}"
    deployment.wait_ready(base, UP_WITHIN)
    deployment.wait_for(lambda: writes_taken(base), UP_WITHIN,
                        "creates taken by every shard", pause=0.5)
    return base


@pytest.mark.timeout(480)
def test_a_cluster_backup_taken_during_play_restores_every_move_acknowledged_before_it(
        cluster, tmp_path: Path):
    """The same on the cluster file: deploy/cluster-backup.sh (a snapshot of each master)
    while players play, `down -v`, deploy/cluster-restore.sh (a new cluster, each
    snapshot's keys imported into it): every shard serves the games of before."""
    deployment, base = cluster
    note = _played_backed_up_and_restored(
        deployment, base, tmp_path, ("cluster-backup.sh", "cluster-restore.sh"),
        CLUSTER_SECTION, _taking_writes, CLUSTER_BACKUP_WITHIN, CLUSTER_RESTORE_WITHIN)
    snapshots = [line for line in note.splitlines() if line.startswith("Snapshot: ")]
    slots = sum(int(high) - int(low) + 1 for line in snapshots
                for low, _, high in (text.partition("-") for text in
                                     line.split(", slots ")[1].split()))
    record(CLUSTER_SECTION, snapshots=(len(snapshots), equal(3)),
           slots_in_the_snapshots=(slots, equal(16384)))
