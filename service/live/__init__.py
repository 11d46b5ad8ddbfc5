"""The live feed: a game's changes as they are stored, to every reader that follows it."""
