"""The installed package is the product without the checkout: its wheel, built from
``pyproject.toml``, ``README.md``, ``openapi.yaml`` and ``service/`` alone (the package's
``service/openapi.yaml`` is a link to the top-level document, copied into the wheel as a
file), installed into a fresh venv
outside the checkout, serves the API with both gunicorn groups' settings and the OpenAPI
document from the package itself, and holds none of the development tooling."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
import requests
import yaml

from devtools.launch import Gunicorn
from devtools.redis_server import free_port

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built in a copy of what the Dockerfile's first stage copies."""
    source = tmp_path_factory.mktemp("source")
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copy(ROOT / "README.md", source)
    shutil.copy(ROOT / "openapi.yaml", source)
    shutil.copytree(ROOT / "service", source / "service", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    # This venv's setuptools, not one fetched from the registry (the Dockerfile's build
    # uses the pinned one): the test needs no network.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(out), str(source)],
                   check=True, cwd=source, stdin=subprocess.DEVNULL)
    [built] = out.glob("patience_server-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv outside the checkout with the wheel installed; its dependencies come
    from this venv's site-packages (a path, so none of this venv's ``.pth`` files, the
    editable install of the checkout among them, is read)."""
    home = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(home)
    python = home / "bin" / "python"
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--quiet", "--no-deps", "--no-index", str(wheel)],
                   check=True, cwd=home, stdin=subprocess.DEVNULL)
    return python


def _run(python: Path, code: str) -> str:
    result = subprocess.run([python, "-c", code], capture_output=True, text=True,
                            cwd=python.parent.parent, env=_env())
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _env(**extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONPATH", "OPENAPI_PATH", "PROMETHEUS_MULTIPROC_DIR")}
    env.update(extra)
    return env


def test_the_wheel_holds_the_service_its_document_and_no_tooling(wheel):
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    assert archive.read("service/openapi.yaml") == (ROOT / "openapi.yaml").read_bytes()
    assert "service/web/index.html" in names
    assert "service/runtime/request_group.py" in names
    assert "service/runtime/events_group.py" in names
    tops = {name.split("/", 1)[0] for name in names}
    assert not tops & {"devtools", "bench", "tests", "examples"}, tops


def test_the_installed_package_comes_from_the_venv_not_the_checkout(installed):
    where = Path(_run(installed, "import service; print(service.__file__)"))
    assert where.is_relative_to(installed.parent.parent), where
    assert not where.is_relative_to(ROOT), where
    found = _run(installed, "import importlib.util as u; print([m for m in "
                            "('devtools', 'bench', 'tests') if u.find_spec(m)])")
    assert found == "[]"


@pytest.mark.timeout(90)
def test_the_installed_package_serves_the_api(installed, redis_server, tmp_path):
    """gunicorn of the fresh venv, with the request group's settings from the package,
    started in a directory that holds nothing of the project."""
    port = free_port()
    env = _env(HOST="127.0.0.1", PORT=str(port), REDIS_URL=redis_server.url,
               WEB_CONCURRENCY="1", LOG_LEVEL="WARNING")
    log = tmp_path / "gunicorn.log"
    with Gunicorn(env, output=log, python=str(installed), cwd=tmp_path) as server:
        base = f"http://127.0.0.1:{port}"
        document = requests.get(f"{base}/v1/openapi.yaml", timeout=5)
        assert document.status_code == 200
        assert yaml.safe_load(document.text) == yaml.safe_load(
            (ROOT / "openapi.yaml").read_text())
        created = requests.post(f"{base}/v1/games", json={"variant": "clock"}, timeout=5)
        assert created.status_code == 201, created.text
        game, token = created.json()["game"], created.json()["player_token"]
        read = requests.get(f"{base}/v1/games/{game['id']}", timeout=5,
                            headers={"Authorization": f"Bearer {token}"})
        assert read.status_code == 200, read.text
        assert read.json()["id"] == game["id"]
        assert requests.get(f"{base}/", timeout=5).status_code == 200  # the web client
        assert server.stop() == 0
    assert "Traceback" not in log.read_text()
