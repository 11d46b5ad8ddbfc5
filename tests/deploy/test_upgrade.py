"""A rolling upgrade of docker-compose.cluster.yml on a real Docker Engine, as
docs/deployment.md ("Upgrades") tells the operator: the deployment up on the service's
previous image (the commit before the last change of its code, tests/deploy/conftest.py),
games created and played there, then deploy/upgrade.sh replaces the API replicas, the
events containers and the solver's worker one at a time by the current image, each API
replica drained through HAProxy first, while players go on playing the games of before.
No request fails and none is sent again; while old and new replicas both serve, each
game is written by either (its record written by the old code read by the new, and the
other way); afterwards every game of before reads as acknowledged and takes its next
move on the new image.
"""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
import requests

from tests.deploy.clients import (
    ResumingFollower,
    auth,
    create,
    run_players,
    salic_law_games,
    stop_players,
    summary,
    versions,
    writes_taken,
)
from tests.deploy.compose import ROOT, DeployError, Deployment, docker, up_on_a_free_network
from tests.deploy.conftest import deployment_env, project_name
from tests.deploy.figures import at_least, at_most, equal, record

pytestmark = pytest.mark.timeout(420)
SECTION = "rolling upgrade (docker-compose.cluster.yml)"
SERVERS = ["api/api-1", "api/api-2", "api/api-3", "events/events-1", "events/events-2"]
ROLLED = ["api-1", "api-2", "api-3", "events-1", "events-2", "worker"]
#: Seconds from `up` to every server in HAProxy's rotation and writes taken.
UP_WITHIN = 180
#: Seconds deploy/upgrade.sh may take for the six services (each: drained, recreated,
#: answering, checked by HAProxy, back in rotation).
UPGRADE_WITHIN = 240.0
#: Seconds each service's step may take (the script's own limit of a wait is 120 s).
STEP_WITHIN = 120.0
#: Seconds a request of a playing client may take meanwhile.
LATENCY_WITHIN = 5.0
GAMES = 8
#: Games of those followed over Server-Sent Events through the roll, and followers each.
FOLLOWED, FOLLOWERS_EACH = 2, 2
CLOCK_GAMES, CLOCK_MOVES = 3, 4


def _in_rotation(deployment: Deployment) -> bool:
    try:
        states = deployment.haproxy_states()
    except DeployError:
        return False
    return all(states.get(server) == "UP" for server in SERVERS)


@pytest.fixture
def old_cluster(base_images, previous_app_image):
    """The cluster file up on the previous image, every server in HAProxy's rotation and
    every shard taking writes: ``(deployment, base URL)``."""
    started = time.monotonic()
    deployment, _prefix = up_on_a_free_network(
        "docker-compose.cluster.yml", project_name("upgrade"),
        lambda prefix: deployment_env(base_images, previous_app_image, WEB_CONCURRENCY="1",
                                      REDIS_NETWORK=prefix))
    try:
        base = f"http://{deployment.published('lb', 8000)}"
        deployment.wait_for(lambda: _in_rotation(deployment), UP_WITHIN,
                            "every server in HAProxy's rotation", pause=0.5)
        deployment.wait_for(lambda: writes_taken(base), UP_WITHIN,
                            "creates taken by every shard", pause=0.5)
        record(SECTION, up_on_the_previous_image_s=(round(time.monotonic() - started, 1),
                                                    at_most(UP_WITHIN)))
        yield deployment, base
    finally:
        deployment.save_logs("deploy-upgrade.log")
        deployment.remove()


def _clock_games(base: str) -> dict[str, tuple[str, int]]:
    """Clock games created and played a few moves: ``{id: (token, version)}``."""
    found = {}
    with requests.Session() as session:
        for number in range(CLOCK_GAMES):
            game_id, token = create(session, base, variant="clock", seed=200 + number)
            version = 0
            for _ in range(CLOCK_MOVES):
                version = _next_clock_move(session, base, game_id, token, version)
            found[game_id] = (token, version)
    return found


def _next_clock_move(session: requests.Session, base: str, game_id: str, token: str,
                     version: int) -> int:
    listing = session.get(f"{base}/v1/games/{game_id}/moves", timeout=10)
    assert listing.status_code == 200, listing.text
    move = next(m for m in listing.json()["moves"] if m["type"] != "resign")
    answer = session.post(f"{base}/v1/games/{game_id}/moves", json=move,
                          headers=auth(token, **{"If-Match": f'"{version}"'}), timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()["game"]["version"]


class Upgrade(threading.Thread):
    """deploy/upgrade.sh run as the operator runs it, each line of its output kept with
    the moment (monotonic) it came."""

    def __init__(self, deployment: Deployment, image: str):
        super().__init__(daemon=True)
        self.env = {**deployment.env, "APP_IMAGE": image,
                    "COMPOSE": " ".join(deployment.command),
                    "COMPOSE_FILE": str(deployment.file),
                    "COMPOSE_PROJECT_NAME": deployment.project,
                    # The tests' images are built already: never again here.
                    "UPGRADE_UP_ARGS": "--no-build"}
        self.lines: list[tuple[float, str]] = []
        self.stderr = ""
        self.returncode: int | None = None

    def run(self) -> None:
        with subprocess.Popen([str(ROOT / "deploy" / "upgrade.sh")], cwd=ROOT, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) as process:
            errors = []
            reader = threading.Thread(target=lambda: errors.append(process.stderr.read()),
                                      daemon=True)
            reader.start()
            for line in process.stdout:
                self.lines.append((time.monotonic(), line.strip()))
            process.wait()
            reader.join(10)
            self.stderr = "".join(errors)
            self.returncode = process.returncode

    def moment(self, text: str) -> float:
        return next(moment for moment, line in self.lines if line.endswith(text))


def _image_id(reference: str) -> str:
    return docker("inspect", "--format", "{{.Id}}", reference).stdout.strip()


def test_a_rolling_upgrade_from_the_previous_image_fails_no_request(
        old_cluster, app_image, previous_app_image):
    deployment, base = old_cluster
    previous, current = _image_id(previous_app_image), _image_id(app_image)
    assert previous != current
    with requests.Session() as session:
        games = salic_law_games(session, base, GAMES)
    clock = _clock_games(base)
    followers = [ResumingFollower(base, game.id) for game in games[:FOLLOWED]
                 for _ in range(FOLLOWERS_EACH)]
    for follower in followers:
        follower.start()
    for follower in followers:
        assert follower.opened.wait(15), "a stream did not open"
    stop, players = run_players(base, games, 2, pause=0.02)
    upgrade = Upgrade(deployment, app_image)
    try:
        time.sleep(1.0)  # the players are under way on the old image
        started = time.monotonic()
        upgrade.start()
        upgrade.join(UPGRADE_WITHIN + 60)
        upgraded = time.monotonic()
        time.sleep(1.0)  # and on the new one
    finally:
        answers = stop_players(stop, players)
    assert not upgrade.is_alive(), "deploy/upgrade.sh did not end"
    output = "\n".join(line for _, line in upgrade.lines)
    (ROOT / "tests" / "artifacts").mkdir(parents=True, exist_ok=True)
    (ROOT / "tests" / "artifacts" / "deploy-upgrade-steps.txt").write_text(
        f"{output}\n{upgrade.stderr}")
    assert upgrade.returncode == 0, f"{output}\n{upgrade.stderr[-3000:]}"

    # Old and new replicas both served from api-1's return to the rotation on the new
    # image until api-3, the last old one, was drained.
    mixed_from = upgrade.moment("api-1 in rotation on image " + current[7:19])
    mixed_until = upgrade.moment("api-3 drained")
    mixed = [a for a in answers if mixed_from <= a.started and a.ended <= mixed_until]
    mixed_games = {a.game for a in mixed if a.kind == "write" and a.ok}
    figures = summary(answers)
    # Each service's step: from the end of the one before to its own end.
    done = {service: "running" if service == "worker" else "in rotation"
            for service in ROLLED}
    ends = [started] + [upgrade.moment(f"{service} {done[service]} on image {current[7:19]}")
                        for service in ROLLED]
    steps = {f"step_{service}_s": (round(end - before, 1), at_most(STEP_WITHIN))
             for service, before, end in zip(ROLLED, ends[:-1], ends[1:], strict=True)}

    # Every container rolled runs the new image; every game of before reads as
    # acknowledged, its history too, and takes its next move there.
    deployment._containers.clear()
    running = {service: docker("inspect", "--format", "{{.Image}}",
                               deployment.container(service)).stdout.strip()
               for service in ROLLED}
    found = versions(base, games)
    refused = []
    with requests.Session() as session:
        for game in games:
            history = session.get(f"{base}/v1/games/{game.id}/history", timeout=10)
            if history.status_code != 200:
                refused.append(f"{game.id}: history {history.status_code} {history.text[:200]}")
            headers = auth(game.token, **{"If-Match": f'"{found[game.id]}"'})
            if found[game.id] % 2 == 0:
                answer = session.post(f"{base}/v1/games/{game.id}/moves",
                                      json={"type": "deal"}, headers=headers, timeout=10)
            else:
                answer = session.post(f"{base}/v1/games/{game.id}/undo", headers=headers,
                                      timeout=10)
            if answer.status_code != 200 or \
                    answer.json()["game"]["version"] != found[game.id] + 1:
                refused.append(f"{game.id}: {answer.status_code} {answer.text[:200]}")
        for game_id, (token, version) in clock.items():
            history = session.get(f"{base}/v1/games/{game_id}/history", timeout=10)
            if history.status_code != 200 or \
                    [m["version"] for m in history.json()["moves"]] != list(range(1, version + 1)):
                refused.append(f"{game_id}: history {history.status_code} {history.text[:200]}")
            try:
                _next_clock_move(session, base, game_id, token, version)
            except AssertionError as error:
                refused.append(f"{game_id}: {error}")

    # The followers went through both events containers' replacement: each stream ended
    # and resumed; each follower has its game's whole feed, every event once, in order.
    missed, twice = _followers_got_every_event(base, games[:FOLLOWED], followers)

    record(
        SECTION, detail=figures["other_failures"] or refused[:5] or output,
        previous_image_differs_from_current=(previous != current, equal(True)),
        upgrade_s=(round(upgraded - started, 1), at_most(UPGRADE_WITHIN)),
        **steps,
        services_rolled_onto_the_new_image=(
            sum(image == current for image in running.values()), equal(len(ROLLED))),
        requests=(figures["requests"], at_least(100)),
        failed=(figures["failed"], equal(0)),
        sent_again=(figures["sent_again"], equal(0)),
        kept_alive_share=(figures["kept_alive_share"], at_least(0.9)),
        max_latency_s=(figures["max_latency_s"], at_most(LATENCY_WITHIN)),
        requests_while_old_and_new_replicas_served=(len(mixed), at_least(20)),
        failed_while_old_and_new_replicas_served=(sum(not a.ok for a in mixed),
                                                     equal(0)),
        games_written_while_old_and_new_replicas_served=(len(mixed_games),
                                                            equal(GAMES)),
        games_of_before=(len(games) + len(clock), equal(GAMES + CLOCK_GAMES)),
        acknowledged_moves=(sum(g.acknowledged for g in games), at_least(GAMES * 4)),
        acknowledged_moves_lost=(
            sum(max(0, g.acknowledged - found[g.id]) for g in games), equal(0)),
        moves_applied_twice=(
            sum(max(0, found[g.id] - g.acknowledged) for g in games), equal(0)),
        games_of_before_refusing_their_next_move=(len(refused), equal(0)),
        followers=(len(followers), equal(FOLLOWED * FOLLOWERS_EACH)),
        followers_whose_stream_ended_and_resumed=(
            sum(bool(f.failures) and f.resumed() is not None for f in followers),
            equal(len(followers))),
        followers_events_missed=(missed, equal(0)),
        followers_events_twice=(twice, equal(0)),
    )


def _followers_got_every_event(base: str, followed: list, followers: list) -> tuple[int, int]:
    """Each followed game's feed (read as JSON) against what its followers got, once
    they caught up; then the games deleted, which ends their streams.  The events missed
    and the events got twice, over all followers."""
    with requests.Session() as session:
        feeds = {}
        for game in followed:
            answer = session.get(f"{base}/v1/games/{game.id}/events",
                                 headers={"Accept": "application/json"}, timeout=10)
            assert answer.status_code == 200, answer.text
            feeds[game.id] = answer.json()["events"]
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and \
                any(len(f.events) < len(feeds[f.game_id]) for f in followers):
            time.sleep(0.1)
        for game in followed:
            answer = session.delete(f"{base}/v1/games/{game.id}", headers=auth(game.token),
                                    timeout=10)
            assert answer.status_code in (200, 204), answer.text
    for follower in followers:
        follower.join(15)
        assert not follower.is_alive(), follower.game_id
        assert follower.error is None, repr(follower.error)
    missed = twice = 0
    for follower in followers:
        got = [int(message.id) for message in follower.events]
        expected = [entry["version"] for entry in feeds[follower.game_id]]
        missed += len(set(expected) - set(got))
        twice += len(got) - len(set(got))
        if not missed and not twice:
            assert [message.json() for message in follower.events] == \
                feeds[follower.game_id], follower.game_id
    return missed, twice
