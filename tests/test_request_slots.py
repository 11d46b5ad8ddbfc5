"""The request processes' turns through the app (service/runtime/slots.py, REQUEST_SLOTS):
at most that many requests in the app at once, the others let in first come, first
served; one that waited REQUEST_SLOT_WAIT_SECONDS goes in without a turn, and no turn
is ever lost or doubled, whatever the timing.  Real threads around a WSGI app that
blocks where each case tells it to."""

from __future__ import annotations

import random
import threading
import time

import pytest

from service.observability import metrics
from service.observability.telemetry import LEAVE_TURN
from service.runtime.slots import RequestSlots


class App:
    """A WSGI app that records who entered, and holds each request until released."""

    def __init__(self):
        self.lock = threading.Lock()
        self.entered: list[str] = []
        self.inside = 0
        self.most_inside = 0
        self.gates: dict[str, threading.Event] = {}

    def __call__(self, environ, start_response):
        name = environ["name"]
        with self.lock:
            self.entered.append(name)
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        try:
            gate = self.gates.get(name)
            if gate is not None:
                assert gate.wait(10)
            elif environ.get("hold"):
                time.sleep(environ["hold"])
            if environ.get("fail"):
                raise RuntimeError("the app failed")
            start_response("200 OK", [])
            return [name.encode()]
        finally:
            with self.lock:
                self.inside -= 1


def _call(slots: RequestSlots, name: str, answers: dict, **environ):
    def run():
        env = {"name": name, **environ}
        try:
            answers[name] = slots(env, lambda status, headers: None)
        except RuntimeError as error:
            answers[name] = error
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _until(condition, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.001)


def test_waiting_requests_go_in_first_come_first_served():
    app, answers = App(), {}
    slots = RequestSlots(app, 1, max_wait=30)
    app.gates["first"] = threading.Event()
    threads = [_call(slots, "first", answers)]
    _until(lambda: app.entered == ["first"])
    names = [f"waiter-{number}" for number in range(8)]
    for number, name in enumerate(names):  # each waiting before the next arrives
        threads.append(_call(slots, name, answers))
        _until(lambda number=number: slots.state() == (0, number + 1))
    app.gates["first"].set()
    for thread in threads:
        thread.join(10)
    assert app.entered == ["first", *names]
    assert app.most_inside == 1
    assert answers == {name: [name.encode()] for name in ["first", *names]}
    assert slots.state() == (1, 0)


def test_at_most_that_many_requests_are_in_the_app_at_once():
    app, answers = App(), {}
    slots = RequestSlots(app, 3, max_wait=30)
    threads = [_call(slots, f"r{number}", answers, hold=0.02) for number in range(12)]
    for thread in threads:
        thread.join(10)
    assert len(answers) == 12
    assert app.most_inside == 3
    assert slots.state() == (3, 0)


def test_a_request_that_waited_its_limit_goes_in_without_a_turn():
    """A turn held by a request that waits on something (here, forever until released)
    holds the others up for ``max_wait`` at most; they do not take its turn, and once
    it leaves every turn is back."""
    app, answers = App(), {}
    slots = RequestSlots(app, 1, max_wait=0.05)
    app.gates["stuck"] = threading.Event()
    given_up = metrics.SLOT_WAITS_GIVEN_UP._value.get()
    stuck = _call(slots, "stuck", answers)
    _until(lambda: app.entered == ["stuck"])
    started = time.monotonic()
    others = [_call(slots, f"other-{number}", answers) for number in range(4)]
    for thread in others:
        thread.join(10)
    waited = time.monotonic() - started
    assert sorted(answers) == [f"other-{number}" for number in range(4)]
    assert 0.05 <= waited < 1.0, waited
    assert metrics.SLOT_WAITS_GIVEN_UP._value.get() - given_up == 4
    assert slots.state() == (0, 0)  # the stuck request still holds the one turn
    app.gates["stuck"].set()
    stuck.join(10)
    assert slots.state() == (1, 0)


@pytest.mark.parametrize("body", [{"CONTENT_LENGTH": "17"},
                                  {"HTTP_TRANSFER_ENCODING": "chunked"}])
def test_a_request_with_a_body_goes_in_without_waiting_for_a_turn(body):
    """Its body comes at its client's pace: in turn, a slow one would hold the others
    up.  A request without one (or of length 0) waits for its turn."""
    app, answers = App(), {}
    slots = RequestSlots(app, 1, max_wait=30)
    app.gates["first"] = threading.Event()
    first = _call(slots, "first", answers)
    _until(lambda: app.entered == ["first"])
    _call(slots, "with-a-body", answers, **body).join(10)
    assert answers["with-a-body"] == [b"with-a-body"]
    assert slots.state() == (0, 0)
    empty = _call(slots, "empty", answers, CONTENT_LENGTH="0")
    _until(lambda: slots.state() == (0, 1))
    assert "empty" not in app.entered
    app.gates["first"].set()
    for thread in (first, empty):
        thread.join(10)
    assert app.entered == ["first", "with-a-body", "empty"]
    assert slots.state() == (1, 0)


def test_a_request_that_leaves_its_turn_lets_the_next_one_in_and_goes_on():
    """A view about to compute for long calls ``LEAVE_TURN``: the first waiter goes in
    while it goes on; leaving twice, or leaving then ending, gives back one turn."""
    app, answers = App(), {}
    slots = RequestSlots(app, 1, max_wait=30)
    app.gates["searching"] = threading.Event()
    leave = []

    def leaving_app(environ, start_response):
        if environ["name"] == "searching":
            leave.append(environ[LEAVE_TURN])
        return app(environ, start_response)

    slots.wsgi_app = leaving_app
    searching = _call(slots, "searching", answers)
    _until(lambda: app.entered == ["searching"])
    waiter = _call(slots, "waiter", answers)
    _until(lambda: slots.state() == (0, 1))
    leave[0]()
    leave[0]()
    waiter.join(10)
    assert answers["waiter"] == [b"waiter"]  # in while the search goes on
    assert "searching" not in answers
    assert slots.state() == (1, 0)
    app.gates["searching"].set()
    searching.join(10)
    assert answers["searching"] == [b"searching"]
    assert slots.state() == (1, 0)


def test_a_failing_request_gives_its_turn_back():
    app, answers = App(), {}
    slots = RequestSlots(app, 1, max_wait=30)
    _call(slots, "failing", answers, fail=True).join(10)
    _call(slots, "next", answers).join(10)
    assert isinstance(answers["failing"], RuntimeError)
    assert answers["next"] == [b"next"]
    assert slots.state() == (1, 0)


def test_no_turn_is_lost_or_doubled_when_waits_run_out_as_turns_are_handed_on():
    """Many requests, holding the app for about as long as the others wait for their
    turn: waits run out at the moment turns are handed on.  Whatever the timing, the
    requests in the app with a turn are never more than the turns, and every turn is
    back at the end."""
    randomness = random.Random(7)
    inside_with_turn, most = [0], [0]
    lock = threading.Lock()

    def app(environ, start_response):
        with lock:
            if environ["turn"]:
                inside_with_turn[0] += 1
                most[0] = max(most[0], inside_with_turn[0])
        time.sleep(environ["hold"])
        with lock:
            if environ["turn"]:
                inside_with_turn[0] -= 1
        return [b""]

    slots = RequestSlots(app, 2, max_wait=0.002)

    def run(hold):  # RequestSlots.__call__, told whether the request holds a turn
        held = slots._enter()
        try:
            app({"hold": hold, "turn": held}, None)
        finally:
            if held:
                slots._leave()

    threads = [threading.Thread(target=run, args=(randomness.uniform(0, 0.004),))
               for _ in range(400)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert most[0] <= 2
    assert slots.state() == (2, 0)


@pytest.mark.parametrize("slots", [0, -1])
def test_fewer_than_one_turn_is_refused(slots):
    with pytest.raises(ValueError, match="at least 1"):
        RequestSlots(App(), slots, 0.02)
