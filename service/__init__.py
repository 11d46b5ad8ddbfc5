"""Patience Server: a REST game server for patience (solitaire) games."""
