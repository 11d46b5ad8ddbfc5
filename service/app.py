"""The Flask application factory."""

from flask import Flask

from service.config import Config


def create_app(test_config: dict | None = None) -> Flask:
    app = Flask(__name__)
    app.config.from_object(Config)
    if test_config is not None:
        app.config.from_mapping(test_config)

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    return app
