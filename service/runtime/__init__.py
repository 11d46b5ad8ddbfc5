"""The gunicorn side: the two groups of processes that serve the app, and the hand-off of
events streams from one to the other."""
