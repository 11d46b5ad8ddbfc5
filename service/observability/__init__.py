"""Observability: what the service tells its operators about itself.

:mod:`.telemetry` gives each request its id and writes the JSON request log (and
configures the JSON logging of every process); :mod:`.metrics` holds the Prometheus
metrics, served at ``GET /metrics``.
"""
