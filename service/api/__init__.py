"""The HTTP API: one blueprint per resource, one error handler."""

from flask import Flask

from service.api.analysis import bp as analysis_bp
from service.api.daily import bp as daily_bp
from service.api.errors import register_error_handlers
from service.api.events import bp as events_bp
from service.api.games import bp as games_bp
from service.api.help import bp as help_bp
from service.api.meta import bp as meta_bp
from service.api.players import bp as players_bp
from service.api.stats import bp as stats_bp
from service.api.variants import bp as variants_bp


def register(app: Flask) -> None:
    for blueprint in (meta_bp, variants_bp, games_bp, events_bp, help_bp, stats_bp,
                      analysis_bp, players_bp, daily_bp):
        app.register_blueprint(blueprint)
    register_error_handlers(app)
