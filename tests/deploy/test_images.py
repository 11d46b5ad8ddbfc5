"""The stand-ins for the base images behave as the official images do, as far as the
Dockerfile and the compose files rely on it (tests/deploy/images.py)."""

from __future__ import annotations

import json

from tests.deploy import images
from tests.deploy.compose import docker


def _run(image: str, script: str) -> str:
    return docker("run", "--rm", "--entrypoint", "sh", image, "-c", script).stdout


def test_the_standins_carry_the_hash_of_their_recipe(base_images):
    assert base_images == images.TAGS
    assert images.up_to_date()
    for tag in base_images.values():
        assert images.label_of(tag) == images.recipe_hash()


def test_python_runs_pip_and_python_as_the_official_image(base_images):
    output = _run(base_images["PYTHON_IMAGE"],
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
    config = json.loads(docker("image", "inspect", base_images["PYTHON_IMAGE"]).stdout)[0]
    assert config["Config"]["Cmd"] == ["python3"]


def test_redis_listens_without_protected_mode_in_data(base_images):
    output = _run(base_images["REDIS_IMAGE"],
                  "pwd; printf 'port 6390\\n' > /tmp/node.conf; "
                  "redis-server /tmp/node.conf --daemonize yes --logfile /tmp/a.log; "
                  "redis-server --port 6391 --daemonize yes --logfile /tmp/b.log; "
                  "for port in 6390 6391; do "
                  "until redis-cli -p $port ping >/dev/null 2>&1; do sleep 0.05; done; "
                  "redis-cli -p $port config get protected-mode | tail -1; done; "
                  "redis-cli -p 6390 info server | grep -c '^redis_version:7\\.'")
    assert output.split() == ["/data", "no", "no", "1"]
    config = json.loads(docker("image", "inspect", base_images["REDIS_IMAGE"]).stdout)[0]
    assert config["Config"]["Cmd"] == ["redis-server"]


def test_haproxy_reads_the_official_path_in_the_foreground(base_images):
    config = json.loads(docker("image", "inspect", base_images["HAPROXY_IMAGE"]).stdout)[0]
    assert config["Config"]["Cmd"] == ["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
    assert config["Config"]["User"] == "haproxy"
    assert config["Config"]["StopSignal"] == "SIGUSR1"
    # Its entrypoint runs haproxy in the foreground as master-worker, as the official one.
    output = docker("run", "--rm", base_images["HAPROXY_IMAGE"], "haproxy", "-vv").stdout
    assert "HAProxy version 2." in output
    script = docker("run", "--rm", "--entrypoint", "cat", base_images["HAPROXY_IMAGE"],
                    config["Config"]["Entrypoint"][0]).stdout
    assert "set -- haproxy -W -db" in script
