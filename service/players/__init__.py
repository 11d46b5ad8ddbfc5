"""Players: identities, their games and statistics."""
