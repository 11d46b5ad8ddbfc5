"""The Four Corners deal the solver proved winnable (tests/four_corners_won.py), played
through the API: created with its seed, each move of the line posted, the game won."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.api.support import create, play
from tests.four_corners_won import SEED, moves


def test_the_line_wins_the_deal_through_the_api(app):
    # A plain test client: 304 answers checked against openapi.yaml would take ten times
    # as long, and the contract tests check these answers' shapes already.
    app.test_client_class = FlaskClient
    client = app.test_client()
    game, token, _response = create(client, "four-corners", seed=SEED)
    assert game["status"] == "playing"
    for number, (move, card) in enumerate(moves(), start=1):
        response = play(client, game["id"], token, move.to_dict())
        assert response.status_code == 200, (number, response.get_json())
        body = response.get_json()
        if card is not None:
            assert body["events"][0]["card"] == card, number
    final = body["game"]
    assert (final["status"], final["moves_made"], final["seed"]) == ("won", 304, SEED)
    assert all(pile["count"] == 13 for pile in final["piles"]
               if pile["id"].startswith(("ace-", "king-")))
    assert sum(pile["count"] for pile in final["piles"]) == 104
