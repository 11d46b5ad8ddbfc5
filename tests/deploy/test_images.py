"""The stand-ins for the base images behave as the official images do, as far as the
Dockerfile and the compose files rely on it (tests/deploy/images.py); where the official
image was pulled, nothing stands in for it and its test is skipped."""

from __future__ import annotations

import json

import pytest

from tests.deploy import images
from tests.deploy.compose import docker


def _standin(base_images: dict[str, str], variable: str) -> str:
    """The stand-in used for ``variable`` (the test is skipped if the official image is)."""
    if base_images[variable] != images.TAGS[variable]:
        pytest.skip(f"{variable} is the official {base_images[variable]}")
    return base_images[variable]


def _run(image: str, script: str) -> str:
    return docker("run", "--rm", "--entrypoint", "sh", image, "-c", script).stdout


def test_the_base_images_are_the_official_ones_or_their_standins(base_images):
    official = images.official()
    assert set(base_images) == set(images.TAGS)
    for variable, tag in base_images.items():
        assert tag in (official[variable], images.TAGS[variable])
        if tag == images.TAGS[variable]:
            assert images.label_of(tag) == images.recipe_hash()


def test_python_runs_pip_and_python_as_the_official_image(base_images):
    python = _standin(base_images, "PYTHON_IMAGE")
    output = _run(python,
                  "for c in python python3 pip; do command -v $c; done; python --version; "
                  "python -c 'import sysconfig, os; print(os.path.exists(os.path.join("
                  "sysconfig.get_path(\"stdlib\"), \"EXTERNALLY-MANAGED\")))'; "
                  "pip install --dry-run --no-index --no-deps /nonexistent 2>&1 | "
                  "grep -c externally-managed-environment || true")
    lines = output.split()
    assert lines[:3] == ["/usr/local/bin/python", "/usr/bin/python3", "/usr/bin/pip"]
    assert lines[3] == "Python"
    assert lines[4].startswith("3.11.")
    assert lines[5] == "False"  # pip install is allowed
    assert lines[6] == "0"
    config = json.loads(docker("image", "inspect", python).stdout)[0]
    assert config["Config"]["Cmd"] == ["python3"]


def test_redis_listens_without_protected_mode_in_data(base_images):
    redis = _standin(base_images, "REDIS_IMAGE")
    output = _run(redis,
                  "pwd; printf 'port 6390\\n' > /tmp/node.conf; "
                  "redis-server /tmp/node.conf --daemonize yes --logfile /tmp/a.log; "
                  "redis-server --port 6391 --daemonize yes --logfile /tmp/b.log; "
                  "for port in 6390 6391; do "
                  "until redis-cli -p $port ping >/dev/null 2>&1; do sleep 0.05; done; "
                  "redis-cli -p $port config get protected-mode | tail -1; done; "
                  "redis-cli -p 6390 info server | grep -c '^redis_version:7\\.'")
    assert output.split() == ["/data", "no", "no", "1"]
    config = json.loads(docker("image", "inspect", redis).stdout)[0]
    assert config["Config"]["Cmd"] == ["redis-server"]


def test_haproxy_reads_the_official_path_in_the_foreground(base_images):
    haproxy = _standin(base_images, "HAPROXY_IMAGE")
    config = json.loads(docker("image", "inspect", haproxy).stdout)[0]
    assert config["Config"]["Cmd"] == ["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
    assert config["Config"]["User"] == "haproxy"
    assert config["Config"]["StopSignal"] == "SIGUSR1"
    # Its entrypoint runs haproxy in the foreground as master-worker, as the official one.
    output = docker("run", "--rm", haproxy, "haproxy", "-vv").stdout
    assert "HAProxy version 2." in output
    script = docker("run", "--rm", "--entrypoint", "cat", haproxy,
                    config["Config"]["Entrypoint"][0]).stdout
    assert "set -- haproxy -W -db" in script
