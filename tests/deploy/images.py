"""The three base images of the Dockerfile and the compose files: the official ones
(:func:`official`: the defaults those files name, ``python:3.11-slim``,
``redis:7-alpine``, ``haproxy:2.9-alpine``) where ``docker pull`` gets them
(:func:`pull`), else stand-ins built from Debian's packages, for a Docker Engine that
cannot pull images (no registry): :func:`resolve` chooses, image by image.

    python -m tests.deploy.images          # builds what is missing, prints the tags
    python -m tests.deploy.images --force  # builds again

One ``debootstrap --variant=minbase`` root of Debian bookworm holds Python 3.11 (pip,
venv), Redis 7.0 and HAProxy 2.6; it is imported once (``docker import``) and each
stand-in is that layer with its own settings on top (``docker build`` of a Dockerfile
without ``RUN``).  One root with all three costs one bootstrap: on the 2-core machine
one root with everything took 2 min 07 s, a bare minbase root 1 min 27 s, so three roots
would take over 4 min.

What the stand-ins keep of the official images, as far as this project relies on it:

- python: ``python``, ``python3`` and ``pip`` on the ``PATH``, ``pip install`` allowed
  (Debian's ``EXTERNALLY-MANAGED`` marker removed), ``CMD ["python3"]``;
- all three: the CA bundle of this machine (:data:`HOST_CA_BUNDLE`, when it has one)
  instead of ca-certificates' own, so that a container trusts what the machine trusts
  (a TLS-inspecting proxy on the way to the package registries, say: the Dockerfile's
  ``pip install`` goes through it);
- redis: ``redis-server`` and ``redis-cli`` on the ``PATH``, working directory ``/data``,
  protected mode off by default (the official image builds Redis so: it listens on every
  address of the container without a password), ``CMD ["redis-server"]``;
- haproxy: ``haproxy -W -db -f /usr/local/etc/haproxy/haproxy.cfg`` (the official image's
  entrypoint and command: master-worker, in the foreground), run as user ``haproxy``,
  ``STOPSIGNAL SIGUSR1`` (a soft stop).

Each image carries the label :data:`LABEL` holding :func:`recipe_hash`, a hash of
everything that decides its contents; an image whose tag and label match is not built
again.  A file lock keeps two test runs on one machine from building at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: Where the official images are named: the Dockerfile's ARG and the compose files'
#: ``${VARIABLE:-default}``.
NAMED_IN = ("Dockerfile", "docker-compose.yml", "docker-compose.cluster.yml")
#: Seconds a ``docker pull`` of an official image may take before the stand-in is used.
PULL_TIMEOUT = 60

SUITE = "bookworm"
MIRROR = os.environ.get("DEBIAN_MIRROR") or "http://deb.debian.org/debian"
PACKAGES = ("ca-certificates", "python3", "python3-pip", "python3-venv", "redis-server",
            "redis-tools", "haproxy")
LABEL = "org.patience-server.standin-recipe"
ROOT_TAG = "patience-standin/debian:bookworm"
#: The variables of the Dockerfile and the compose files, and the stand-in each gets.
TAGS = {
    "PYTHON_IMAGE": "patience-standin/python:3.11",
    "REDIS_IMAGE": "patience-standin/redis:7",
    "HAPROXY_IMAGE": "patience-standin/haproxy:2.6",
}
#: Left out of the root: apt's downloads and lists, documentation, translations.
EXCLUDED = ("./dev/*", "./proc/*", "./sys/*", "./var/cache/apt/archives/*.deb",
            "./var/lib/apt/lists/*", "./usr/share/doc/*", "./usr/share/man/*",
            "./usr/share/locale/*", "./usr/share/info/*")

#: Files written into the root before it is imported: {path: (mode, text)}.
FILES = {
    # The official redis image's Redis starts with protected mode off; Debian's starts
    # with it on (it would refuse the other containers).  The option goes right after
    # a configuration file, so the file and the command line may still set it.
    "usr/local/bin/redis-server": (0o755, """\
#!/bin/sh
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    file=$1
    shift
    exec /usr/bin/redis-server "$file" --protected-mode no "$@"
fi
exec /usr/bin/redis-server --protected-mode no "$@"
"""),
    # The official haproxy image's entrypoint: options alone run haproxy; haproxy runs
    # as master-worker in the foreground.
    "usr/local/bin/haproxy-entrypoint": (0o755, """\
#!/bin/sh
set -e
if [ "${1#-}" != "$1" ]; then
    set -- haproxy "$@"
fi
if [ "$1" = haproxy ]; then
    shift
    set -- haproxy -W -db "$@"
fi
exec "$@"
"""),
}
#: This machine's CA bundle (Debian's path), copied into the root over its own.
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
#: Links made in the root: {path: target}.
LINKS = {"usr/local/bin/python": "/usr/bin/python3"}
#: Removed from the root.
REMOVED = ("usr/lib/python3.11/EXTERNALLY-MANAGED",)

#: Each stand-in: the root's layer and these instructions.
DOCKERFILES = {
    "PYTHON_IMAGE": """\
ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
CMD ["python3"]
""",
    "REDIS_IMAGE": """\
ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /data
VOLUME /data
EXPOSE 6379
CMD ["redis-server"]
""",
    "HAPROXY_IMAGE": """\
ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin
USER haproxy
WORKDIR /var/lib/haproxy
STOPSIGNAL SIGUSR1
ENTRYPOINT ["/usr/local/bin/haproxy-entrypoint"]
CMD ["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
""",
}


class StandinError(RuntimeError):
    """The stand-ins cannot be built here (the message says why)."""


def recipe_hash() -> str:
    """A hash of everything the images are made of (not of this module's comments)."""
    recipe = {"suite": SUITE, "packages": PACKAGES, "excluded": EXCLUDED, "files": FILES,
              "links": LINKS, "removed": REMOVED, "dockerfiles": DOCKERFILES, "tags": TAGS,
              "root": ROOT_TAG, "ca_bundle": _ca_bundle_hash(), "version": 1}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def _ca_bundle_hash() -> str | None:
    try:
        return hashlib.sha256(HOST_CA_BUNDLE.read_bytes()).hexdigest()
    except OSError:
        return None


def _docker(*args: str, check: bool = True, input: bytes | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    result = subprocess.run(["docker", *args], input=input, capture_output=True,
                            timeout=timeout, env=dict(os.environ, DOCKER_BUILDKIT="0"))
    if check and result.returncode != 0:
        raise StandinError(f"docker {' '.join(args)} failed ({result.returncode}):\n"
                           f"{result.stdout.decode(errors='replace')[-2000:]}"
                           f"{result.stderr.decode(errors='replace')[-2000:]}")
    return result


def label_of(tag: str) -> str | None:
    """The recipe label of the image ``tag`` (None: no such image, or no label)."""
    result = _docker("image", "inspect", "--format", f'{{{{ index .Config.Labels "{LABEL}" }}}}',
                     tag, check=False, timeout=60)
    if result.returncode != 0:
        return None
    return result.stdout.decode().strip() or None


def image_id(tag: str) -> str | None:
    """The id of the image ``tag`` (None: no such image)."""
    result = _docker("image", "inspect", "--format", "{{.Id}}", tag, check=False, timeout=60)
    if result.returncode != 0:
        return None
    return result.stdout.decode().strip() or None


def up_to_date() -> bool:
    """Every stand-in exists and was built from this recipe."""
    wanted = recipe_hash()
    return all(label_of(tag) == wanted for tag in TAGS.values())


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    path = Path(tempfile.gettempdir()) / "patience-standin-images.lock"
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _log(message: str) -> None:
    print(f"stand-in images: {message}", file=sys.stderr, flush=True)


def _bootstrap(root: Path) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise StandinError("debootstrap is not installed (apt-get install debootstrap)")
    if os.geteuid() != 0:
        raise StandinError("debootstrap needs root")
    # At the lowest priorities: it runs beside the other tests (tests/deploy/conftest.py).
    result = subprocess.run(
        ["nice", "-n", "19", "ionice", "-c", "3", debootstrap, "--variant=minbase",
         f"--include={','.join(PACKAGES)}", SUITE, str(root), MIRROR],
        capture_output=True, text=True, timeout=1200)
    if result.returncode != 0:
        log = root / "debootstrap" / "debootstrap.log"
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise StandinError(f"debootstrap failed ({result.returncode}):\n"
                           f"{result.stdout[-2000:]}{result.stderr[-2000:]}{detail}")
    _prepare(root)


def _prepare(root: Path) -> None:
    """The stand-ins' own files in the root (:data:`FILES`, :data:`LINKS`, :data:`REMOVED`)."""
    for path, (mode, text) in FILES.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)
    for path, target in LINKS.items():
        link = root / path
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    for path in REMOVED:
        (root / path).unlink(missing_ok=True)
    if HOST_CA_BUNDLE.is_file():
        bundle = root / str(HOST_CA_BUNDLE).lstrip("/")
        bundle.unlink(missing_ok=True)
        shutil.copyfile(HOST_CA_BUNDLE, bundle)
    (root / "data").mkdir(exist_ok=True)


def _import(root: Path, wanted: str) -> None:
    tar = subprocess.Popen(
        ["tar", "-C", str(root), "--numeric-owner", *(f"--exclude={p}" for p in EXCLUDED),
         "-c", "."], stdout=subprocess.PIPE)
    try:
        result = subprocess.run(
            ["docker", "import", "--change", f"LABEL {LABEL}={wanted}", "--change",
             'CMD ["bash"]', "-", ROOT_TAG], stdin=tar.stdout, capture_output=True,
            timeout=600)
    finally:
        tar.stdout.close()
        tar.wait()
    if result.returncode != 0 or tar.returncode != 0:
        raise StandinError(f"docker import failed: {result.stderr.decode(errors='replace')}")


def build(force: bool = False) -> dict[str, str]:
    """Builds the stand-ins that are missing or from another recipe (all with ``force``);
    returns :data:`TAGS`.  :class:`StandinError` says why it could not."""
    wanted = recipe_hash()
    with _lock():
        if not force and up_to_date():
            return dict(TAGS)
        started = time.monotonic()
        replaced = {image_id(tag) for tag in (ROOT_TAG, *TAGS.values())} - {None}
        if force or label_of(ROOT_TAG) != wanted:
            _log(f"debootstrap of {SUITE} with {', '.join(PACKAGES)} (about 2 minutes)")
            with tempfile.TemporaryDirectory(prefix="patience-standin-",
                                             dir="/var/tmp") as folder:
                root = Path(folder) / "root"
                _bootstrap(root)
                _import(root, wanted)
            _log(f"root imported as {ROOT_TAG} after {time.monotonic() - started:.0f} s")
        for variable, tag in TAGS.items():
            dockerfile = f"FROM {ROOT_TAG}\n{DOCKERFILES[variable]}LABEL {LABEL}={wanted}\n"
            _docker("build", "--quiet", "-t", tag, "-", input=dockerfile.encode())
        # The images these tags named before, unless something still uses them.
        replaced -= {image_id(tag) for tag in (ROOT_TAG, *TAGS.values())}
        for old in replaced:
            _docker("rmi", old, check=False, timeout=120)
        _log(f"built {', '.join(TAGS.values())} in {time.monotonic() - started:.0f} s")
    return dict(TAGS)


def official() -> dict[str, str]:
    """The official image of each variable of :data:`TAGS`: the default that the
    Dockerfile and the compose files give it (they must agree)."""
    root = Path(__file__).resolve().parent.parent.parent
    found: dict[str, set[str]] = {variable: set() for variable in TAGS}
    for name in NAMED_IN:
        text = (root / name).read_text()
        for variable in TAGS:
            pattern = rf"\$\{{{variable}:-([^}}]+)\}}|^ARG {variable}=(\S+)"
            for in_compose, in_dockerfile in re.findall(pattern, text, re.MULTILINE):
                found[variable].add(in_compose or in_dockerfile)
    for variable, names in found.items():
        if len(names) != 1:
            raise StandinError(f"{variable}: {', '.join(NAMED_IN)} name {sorted(names)}")
    return {variable: names.pop() for variable, names in found.items()}


def pull(image: str) -> str | None:
    """``docker pull image``: None once pulled, else why not."""
    try:
        result = _docker("pull", "--quiet", image, check=False, timeout=PULL_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"no answer within {PULL_TIMEOUT} s"
    if result.returncode != 0:
        return result.stderr.decode(errors="replace").strip()[-300:] or "failed"
    return None


def resolve() -> tuple[dict[str, str], dict[str, str]]:
    """The image of each variable of :data:`TAGS`, and where it comes from
    (``{"PYTHON_IMAGE": "official python:3.11-slim"}``, or ``"stand-in ... (python:3.11-slim
    not pulled: ...)"``): the official ones that ``docker pull`` gets, stand-ins (built if
    missing) for the others."""
    names = official()
    with ThreadPoolExecutor(len(names)) as pool:
        failures = dict(zip(names, pool.map(pull, names.values()), strict=True))
    tags = {variable: names[variable] for variable, failure in failures.items()
            if failure is None}
    sources = {variable: f"official {names[variable]}" for variable in tags}
    if len(tags) < len(TAGS):
        standins = dict(TAGS) if up_to_date() else build()
        for variable, failure in failures.items():
            if failure is not None:
                tags[variable] = standins[variable]
                sources[variable] = (f"stand-in {standins[variable]} ({names[variable]} "
                                     f"not pulled: {failure.splitlines()[-1][:160]})")
    return tags, sources


def main(argv: list[str]) -> int:
    try:
        tags = build(force="--force" in argv)
    except StandinError as error:
        print(error, file=sys.stderr)
        return 1
    for variable, tag in tags.items():
        print(f"{variable}={tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
