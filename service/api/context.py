"""The views' one way to the service objects: :func:`services`, the
:class:`~service.services.Services` of the app that serves the request (a
:class:`ServiceApp`, :func:`service.app.create_app`)."""

from __future__ import annotations

from typing import cast

from flask import Flask, current_app

from service.services import Services


class ServiceApp(Flask):
    """A Flask app that holds its process's service objects."""

    services: Services


def services() -> Services:
    """The service objects of the current app."""
    return cast(ServiceApp, current_app).services
