"""Players: accounts the server issues (or an OpenID Connect identity), the games they
own, "my games", their statistics, and their data to take away or erase
(docs/players.md).  Between the views and the game layer: the projection of owned
games' events onto the players' keys, and its sweeper (run by the solver's worker)."""
