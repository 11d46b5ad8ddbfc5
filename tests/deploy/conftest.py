"""Fixtures of the deploy tests: the Docker Engine (or the reason they are skipped), the
stand-in base images (tests/deploy/images.py, cached between runs), the service's image
built once per session from the Dockerfile, and the figures the tests measure: printed
at the end of the run ("deploy figures") and written to tests/artifacts/deploy-figures.json.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

import pytest

from tests.deploy import images
from tests.deploy.compose import Deployment, docker, engine_problem

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACT = ROOT / "tests" / "artifacts" / "deploy-figures.json"
#: The service's image: a tag per session, and the one that keeps the last build's layers
#: (the dependencies' layer is reused while pyproject.toml does not change).
APP_REPOSITORY = "patience-server-test"
CACHE_TAG = f"{APP_REPOSITORY}:cache"

FIGURES: dict[str, dict] = {}


def record(section: str, **values) -> None:
    """Adds measured figures under ``section`` (printed and written at the end)."""
    FIGURES.setdefault(section, {}).update(values)


def pytest_terminal_summary(terminalreporter):
    if not FIGURES:
        return
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(json.dumps(FIGURES, indent=2, sort_keys=True) + "\n")
    terminalreporter.section("deploy figures")
    for section, values in FIGURES.items():
        terminalreporter.write_line(f"{section}:")
        for name, value in values.items():
            terminalreporter.write_line(f"    {name}: {value}")
    terminalreporter.write_line(f"(also in {ARTIFACT.relative_to(ROOT)})")


def project_name(kind: str) -> str:
    """A compose project name of this run alone."""
    return f"patience-test-{kind}-{os.getpid()}-{secrets.token_hex(3)}"


@pytest.fixture(scope="session")
def docker_engine():
    problem = engine_problem()
    if problem:
        pytest.skip(f"deploy tests need a Docker Engine and compose: {problem}")


@pytest.fixture(scope="session")
def base_images(docker_engine) -> dict[str, str]:
    """The stand-ins' tags by variable (PYTHON_IMAGE, REDIS_IMAGE, HAPROXY_IMAGE)."""
    if images.up_to_date():
        record("images", standins="cached")
        return dict(images.TAGS)
    started = time.monotonic()
    try:
        tags = images.build()
    except images.StandinError as error:
        if "not installed" in str(error) or "needs root" in str(error):
            pytest.skip(f"deploy tests: the stand-in base images cannot be built: {error}")
        raise
    record("images", standins_built_s=round(time.monotonic() - started, 1))
    return tags


@pytest.fixture(scope="session")
def app_image(base_images) -> str:
    """The service's image, built once from the Dockerfile on the stand-in python by the
    single-file compose's build (both files build the same image)."""
    tag = f"{APP_REPOSITORY}:{project_name('image').removeprefix('patience-test-')}"
    builder = Deployment("docker-compose.yml", project_name("build"),
                         {**base_images, "APP_IMAGE": tag, "SECRET_KEY": "x" * 43})
    started = time.monotonic()
    builder.compose("build", "api", timeout=1200)
    record("images", app_image_build_s=round(time.monotonic() - started, 1))
    yield tag
    # Keep the build's layers for the next run under the cache tag, and let the image
    # the cache tag named before go (unless something still uses it).
    previous = docker("image", "inspect", "--format", "{{.Id}}", CACHE_TAG,
                      check=False).stdout.strip()
    docker("tag", tag, CACHE_TAG, check=False)
    docker("rmi", tag, check=False)
    current = docker("image", "inspect", "--format", "{{.Id}}", CACHE_TAG,
                     check=False).stdout.strip()
    if previous and previous != current:
        docker("rmi", previous, check=False)


def deployment_env(base_images: dict[str, str], app_image: str, **extra: str) -> dict:
    return {**base_images, "APP_IMAGE": app_image, "SECRET_KEY": secrets.token_urlsafe(32),
            # Published on 127.0.0.1 only, on a port the engine picks.
            "PORT": "127.0.0.1:", "LOG_LEVEL": "INFO", **extra}
