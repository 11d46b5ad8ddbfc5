"""The searches: the solver and the searched lines of the hints."""
