"""Fixtures of the deploy tests: the Docker Engine (or the reason they are skipped), the
base images (tests/deploy/images.py: the official ones where ``docker pull`` gets them,
else stand-ins, cached between runs), the service's image built once per session from
the Dockerfile, and its previous image (the commit before the last change of its code,
kept between runs) that the rolling upgrade starts from.  The figures the tests measure
are tests/deploy/figures.py's.

With ``REQUIRE_DOCKER=1`` in the environment (``.ci/run`` sets it), what would skip them
(no Docker Engine, no compose, no debootstrap for the stand-ins) fails them instead.

The deploy tests run last (under pytest-xdist, all on one worker, first), and the images they
need are built from the start of the session in a thread of their own while the other
tests run (a cold build takes minutes: the stand-ins' debootstrap, then the service's
dependencies), so that `make test` waits for them as little as possible.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.deploy import images
from tests.deploy.compose import Deployment, docker, engine_problem
from tests.deploy.figures import at_most, record, starts_with, worker

ROOT = Path(__file__).resolve().parent.parent.parent
HERE = Path(__file__).resolve().parent
#: The service's image: a tag per session, and the one that keeps the last build's layers
#: (the dependencies' layer is reused while pyproject.toml does not change).
APP_REPOSITORY = "patience-server-test"
CACHE_TAG = f"{APP_REPOSITORY}:cache"
#: Seconds the service's image may take to build (the compose build's own limit).
BUILD_WITHIN = 1200

#: The inputs of the service's image whose last change makes the previous image the one
#: a rolling upgrade starts from (tests/deploy/test_upgrade.py).
IMAGE_CODE = ("service", "pyproject.toml")


def project_name(kind: str) -> str:
    """A compose project name of this run alone."""
    return f"patience-test-{kind}-{os.getpid()}-{secrets.token_hex(3)}"


def _is_deploy(item: pytest.Item) -> bool:
    return HERE in Path(str(item.path)).resolve().parents


def pytest_collection_modifyitems(config, items):
    """The deploy tests last (their images get the whole run to be built); under
    pytest-xdist they are one unit of work, on one worker (tests/conftest.py)."""
    items[:] = [item for item in items if not _is_deploy(item)] + \
        [item for item in items if _is_deploy(item)]


class Preparation(threading.Thread):
    """Builds the stand-ins, then the service's image; :meth:`result` waits for them."""

    def __init__(self, previous: bool = True):
        super().__init__(daemon=True, name="deploy-images")
        self.wants_previous = previous
        self.tags: dict[str, str] | None = None
        self.app_image: str | None = None
        self.error: BaseException | None = None
        self.previous: tuple[str, str] | None = None
        self.previous_thread: threading.Thread | None = None
        self.previous_error: BaseException | None = None
        self.problem = engine_problem()

    def run(self) -> None:
        if self.problem:
            return
        try:
            started = time.monotonic()
            self.tags, sources = images.resolve()
            record("images", base_images_ready_s=(round(time.monotonic() - started, 1),
                                                  at_most(BUILD_WITHIN)),
                   **{variable: (source, starts_with("official ", "stand-in "))
                      for variable, source in sources.items()})
            started = time.monotonic()
            tag = f"{APP_REPOSITORY}:{project_name('image').removeprefix('patience-test-')}"
            builder = Deployment("docker-compose.yml", project_name("build"),
                                 {**self.tags, "APP_IMAGE": tag, "SECRET_KEY": "x" * 43})
            builder.compose("build", "api", timeout=BUILD_WITHIN)
            self.app_image = tag
            record("images", app_image_build_s=(round(time.monotonic() - started, 1),
                                                at_most(BUILD_WITHIN)))
        except BaseException as error:  # the fixtures report it
            self.error = error
            return
        if not self.wants_previous:
            return
        # The previous image in a thread of its own: only the upgrade's test waits for it.
        self.previous_thread = threading.Thread(target=self._previous, daemon=True,
                                                name="deploy-previous-image")
        self.previous_thread.start()

    def _previous(self) -> None:
        try:
            started = time.monotonic()
            self.previous = build_previous_image(self.tags["PYTHON_IMAGE"])
            record("images", previous_app_image=(self.previous[1], starts_with("commit ")),
                   previous_app_image_ready_s=(round(time.monotonic() - started, 1),
                                               at_most(BUILD_WITHIN)))
        except BaseException as error:  # its fixture reports it
            self.previous_error = error

    def result(self) -> Preparation:
        started = time.monotonic()
        self.join()
        record("images", waited_for_them_s=(round(time.monotonic() - started, 1),
                                            at_most(BUILD_WITHIN)))
        return self


_PREPARATION: list[Preparation] = []


def pytest_collection_finish(session):
    """Starts building the images as soon as deploy tests are to run (under
    pytest-xdist, on the first worker: the one the largest group goes to first)."""
    if session.config.option.collectonly or not any(_is_deploy(i) for i in session.items):
        return
    if worker() not in (None, "gw0"):
        return
    preparation = Preparation(previous=any(item.path.name == "test_upgrade.py"
                                           for item in session.items))
    preparation.start()
    _PREPARATION.append(preparation)


@pytest.fixture(scope="session")
def prepared() -> Preparation:
    if not _PREPARATION:  # collected otherwise (pytest -p no:...): build now
        _PREPARATION.append(Preparation())
        _PREPARATION[0].start()
    preparation = _PREPARATION[0].result()
    if preparation.problem:
        _cannot_run(f"deploy tests need a Docker Engine and compose: {preparation.problem}")
    error = preparation.error
    if isinstance(error, images.StandinError) and (
            "not installed" in str(error) or "needs root" in str(error)):
        _cannot_run(f"deploy tests: the stand-in base images cannot be built: {error}")
    if error is not None:
        raise error
    return preparation


def _cannot_run(reason: str) -> None:
    """Skips the test, or fails it where ``REQUIRE_DOCKER`` is set (other than 0)."""
    if os.environ.get("REQUIRE_DOCKER", "") not in ("", "0"):
        pytest.fail(f"REQUIRE_DOCKER is set: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def base_images(prepared) -> dict[str, str]:
    """The base images by variable (PYTHON_IMAGE, REDIS_IMAGE, HAPROXY_IMAGE): official
    or stand-in (:func:`tests.deploy.images.resolve`)."""
    return dict(prepared.tags)


@pytest.fixture(scope="session")
def app_image(prepared) -> str:
    """The service's image, built once from the Dockerfile on :func:`base_images`' python
    by the single-file compose's build (both files build the same image)."""
    return prepared.app_image


@pytest.fixture(scope="session")
def previous_app_image(prepared) -> str:
    """The service's image of the commit before the last change of its code
    (:func:`build_previous_image`), built beside :func:`app_image`."""
    if prepared.previous_thread is not None:
        prepared.previous_thread.join()
    if prepared.previous_error is not None:
        raise prepared.previous_error
    return prepared.previous[0]


def _git(*args: str) -> str:
    result = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                            timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def build_previous_image(python_image: str) -> tuple[str, str]:
    """The service's image as it was before the last commit that changed its code
    (:data:`IMAGE_CODE`): that commit's parent, exported (``git archive``) and built
    with its own Dockerfile on ``python_image``, tagged ``<repository>:previous-<commit>``
    and kept between runs (built again only when that commit changes; the previous
    commit's other tags are removed).  The tag, and ``"commit <hash> (<subject>)"``."""
    last_change = _git("rev-list", "-1", "HEAD", "--", *IMAGE_CODE)
    commit = _git("rev-parse", f"{last_change}^")
    tag = f"{APP_REPOSITORY}:previous-{commit[:12]}"
    if docker("image", "inspect", tag, check=False).returncode != 0:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit],
                                 capture_output=True, timeout=120, check=True).stdout
        result = subprocess.run(
            ["docker", "build", "--quiet", "-t", tag, "--build-arg",
             f"PYTHON_IMAGE={python_image}", "-"], input=archive, capture_output=True,
            timeout=BUILD_WITHIN, env={**os.environ, "DOCKER_BUILDKIT": "0"})
        if result.returncode != 0:
            raise RuntimeError(f"building {tag} failed:\n"
                               f"{result.stderr.decode(errors='replace')[-3000:]}")
        for other in docker("images", "--format", "{{.Repository}}:{{.Tag}}",
                            APP_REPOSITORY).stdout.split():
            if other.startswith(f"{APP_REPOSITORY}:previous-") and other != tag:
                docker("rmi", other, check=False)
    return tag, f"commit {commit[:12]} ({_git('log', '-1', '--format=%s', commit)[:80]})"


def pytest_sessionfinish(session):
    """The session's image of the service is kept under the cache tag only (its layers
    serve the next run's build), and the image the cache tag named before goes (unless
    something still uses it)."""
    if not _PREPARATION:
        return
    preparation = _PREPARATION[0]
    preparation.join()
    if preparation.previous_thread is not None:
        preparation.previous_thread.join()
    tag = preparation.app_image
    if tag is None:
        return
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
            "PORT": "127.0.0.1:", "STATS_PORT": "127.0.0.1:", "LOG_LEVEL": "INFO",
            # The tests' clients all come from one address, faster than a person plays.
            "RATELIMIT_DEFAULT": "100000 per minute", **extra}
