"""The tours run: every shell block of README.md and of docs/api-tour.md, in order,
against a live server, outputs compared.

How to write those documents so that this test understands them (keep to it when you
add a section):

- A fenced block whose language is ``sh`` (or ``bash``, ``shell``) is **run**: all of
  a document's blocks, in the order of the file, in one bash session of its own (``set
  -eo pipefail``, so a failing command fails the test), in a temporary directory,
  against a gunicorn and a Redis of this test's own, emptied before each document: each
  document starts from nothing (no variable, no game) and shows what a fresh server
  answers.  ``http://127.0.0.1:8000`` in them becomes that server's URL.
- A block that must not run (``make run``, ``docker ...``, anything that starts a server
  or needs what a test machine lacks) is fenced as ``console``: shown, never run.  Other
  languages (``js``, ``json``, ``yaml``, none) are not shell and are never run.
- Inside a run block, lines starting with ``#>`` are the **output** of the commands
  above them (since the previous ``#>`` lines): ``#> text`` is one line, a bare ``#>`` an
  empty line.  The test compares the output with them after masking, on both sides,
  what changes from run to run: game ids and tokens (20 or more URL-safe characters
  with upper and lower case letters), times (ISO 8601), SHA-256 digests (64 hex digits)
  and salts (32 hex digits).  ``...`` in an expected line stands for any text.
  Commands without ``#>`` lines after them are run, their output is not compared.
- A command with ``--max-time`` (a stream that stays open, such as an SSE ``curl -N``)
  may end by that timeout: curl's exit code 28 is not a failure.
- The commands need ``curl`` and ``jq`` (Debian packages; ``.ci/run`` installs them):
  without them the test is skipped, and says why.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from redis import Redis

ROOT = Path(__file__).resolve().parent.parent.parent
#: The documents whose blocks run, each with the fewest outputs it must compare.
TOURS = {"README.md": 5, "docs/api-tour.md": 50}
RUN_LANGUAGES = {"sh", "bash", "shell"}
README_BASE = "http://127.0.0.1:8000"
FENCE = re.compile(r"^```\s*([A-Za-z0-9_+-]*)\s*$")
MARKER = "__readme_segment_done__"
SEGMENT_TIMEOUT = 60
#: A stream the API tour cuts with --max-time 2 is noticed gone at the next heartbeat,
#: which comes before the server stops (and after the tour's shortest --max-time).
#: No solver's worker runs here, so the first request for an analysis settles it itself:
#: a deal found winnable by its creation's search may take longer to analyse than the
#: default ANALYSIS_INLINE_SECONDS (0.5 s) on a loaded machine, and would stay pending.
#: With no worker, the pools are empty: the tour's winnable Salic Law game is searched
#: by its creation, against the wall clock (at most 840 ms on a quiet machine, more when
#: the suite loads both cores), so a loaded machine gets WINNABLE_SEARCH_SECONDS of 10 s
#: before a 422 the tour does not show.
#: The API tour's daily part makes its players on the spot: it says that it needs a server
#: that takes any account for ranked play (the default takes those made before the day).
API_ENV = {"SSE_HEARTBEAT_SECONDS": "3", "HINT_SECONDS": "60",  # hints: no clock
           "ANALYSIS_INLINE_SECONDS": "10", "WINNABLE_SEARCH_SECONDS": "10",
           "DAILY_ACCOUNT_RULE": "any"}

_URLSAFE = "A-Za-z0-9_-"
MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])"), "<sha256>"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"), "<salt>"),
    # An id or token: 20 URL-safe characters or more, a capital or a digit among them (a
    # code like idempotency_key_reused has neither; an id lacks both once in 10^8).
    (re.compile(rf"(?<![{_URLSAFE}])(?=[{_URLSAFE}]*[A-Z0-9])"
                rf"[{_URLSAFE}]{{20,}}(?![{_URLSAFE}])"), "<id>"),
    # How many sampled deals the solver wins within a hint's budget grows as the solver
    # gets stronger; the move and the words of the reason are compared.
    (re.compile(r"wins in \d+ of (\d+) sampled deals"), r"wins in <n> of \1 sampled deals"),
]


def _mask(text: str) -> str:
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def run_blocks(text: str) -> list[tuple[int, list[str]]]:
    """``(line number of the first line, lines)`` of every block to run, in order."""
    blocks, current, start, language = [], None, 0, None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if current is None and fence:
            current, start, language = [], number + 1, fence.group(1).lower()
        elif current is not None and line.strip() == "```":
            if language in RUN_LANGUAGES:
                blocks.append((start, current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def segments(start: int, lines: list[str]):
    """``(line number, commands, expected lines or None)``: the commands before each run
    of ``#>`` lines, with those lines."""
    found, commands, expected, first = [], [], [], start
    for offset, line in enumerate(lines):
        if line.startswith("#>"):
            expected.append(line[3:] if line.startswith("#> ") else line[2:])
            continue
        if expected:
            found.append((first, commands, expected))
            commands, expected, first = [], [], start + offset
        commands.append(line)
    if commands or expected:
        found.append((first, commands, expected or None))
    return found


def _expected_pattern(expected: list[str]) -> re.Pattern:
    text = _clean(_mask("\n".join(expected)))
    return re.compile(".*?".join(re.escape(part) for part in text.split("...")), re.DOTALL)


class Shell:
    """One bash session fed segment after segment; each answers its output and status."""

    def __init__(self, cwd: Path):
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], cwd=cwd, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ, LC_ALL="C"))
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.run("set -eo pipefail")

    def run(self, script: str) -> str:
        self.process.stdin.write(f"{script}\nprintf '\\n{MARKER}\\n'\n".encode())
        self.process.stdin.flush()
        output = b""
        deadline = time.monotonic() + SEGMENT_TIMEOUT
        while not output.endswith(f"\n{MARKER}\n".encode()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no end after {SEGMENT_TIMEOUT} s; output so far:\n"
                                     + output.decode(errors="replace"))
            if not self.selector.select(remaining):
                continue
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:  # the shell exited: a command failed under set -e
                self.process.wait(5)
                raise AssertionError(f"a command failed (exit {self.process.returncode}); "
                                     f"output:\n{output.decode(errors='replace')}")
            output += chunk
        text = output.decode()
        return text[: -len(f"\n{MARKER}\n")]

    def close(self) -> None:
        self.selector.close()
        self.process.stdin.close()
        self.process.wait(10)
        self.process.stdout.close()


def _prepare(command_lines: list[str], base: str) -> str:
    script = "\n".join(command_lines).replace(README_BASE, base)
    # A stream cut by --max-time ends with curl's exit code 28, which is how it ends.
    return re.sub(r"^(.*--max-time.*[^\\])$", r"\1 || [ $? -eq 28 ]", script, flags=re.M)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", list(TOURS))
def test_every_shell_block_of_the_tours_runs_and_prints_what_it_shows(api, tmp_path, name):
    missing = [tool for tool in ("curl", "jq", "bash", "sha256sum") if not shutil.which(tool)]
    if missing:
        pytest.skip(f"README TEST SKIPPED: {', '.join(missing)} missing (apt-get install -y "
                    "curl jq; .ci/run does it before make test)")
    blocks = run_blocks((ROOT / name).read_text())
    assert len(blocks) >= 1, f"{name}'s walkthrough blocks are not fenced as sh"
    # A fresh server for each document: the statistics they show count their own games.
    Redis.from_url(api.env["REDIS_URL"]).flushall()
    shell = Shell(tmp_path)
    compared = 0
    mismatches = []
    try:
        for start, lines in blocks:
            for line, commands, expected in segments(start, lines):
                output = shell.run(_prepare(commands, api.base))
                if expected is None:
                    continue
                compared += 1
                if not _expected_pattern(expected).fullmatch(_clean(_mask(output))):
                    mismatches.append(f"{name} line {line}: expected\n"
                                      + "\n".join(f"#> {e}".rstrip() for e in expected)
                                      + "\nbut the commands printed\n"
                                      + "\n".join(f"#> {o}".rstrip()
                                                  for o in output.rstrip().splitlines()))
    finally:
        shell.close()
    assert mismatches == [], "\n\n".join(mismatches)
    assert compared >= TOURS[name]


def test_the_readme_test_reads_blocks_and_outputs_as_documented():
    text = "\n".join([
        "```console", "make run", "```",
        "```sh", "echo one", "#> one", "echo two; echo", "#> t...", "#>", "true", "```",
        "```js", "x()", "```",
    ])
    (start, lines), = run_blocks(text)
    assert start == 5
    assert segments(start, lines) == [(5, ["echo one"], ["one"]),
                                      (7, ["echo two; echo"], ["t...", ""]),
                                      (10, ["true"], None)]
    assert _expected_pattern(["t...", ""]).fullmatch(_clean("two\n"))
    assert not _expected_pattern(["one"]).fullmatch("two")
    token = "q7Z2xV9mK4pL8nR3tW6yB1cD5fG0hJ2kM7sA9uE4wQx"
    assert _mask(f'{{"id":"Vx3kQ9rT2mLpW8nB4yZc1A","t":"{token}"}}') == \
        '{"id":"<id>","t":"<id>"}'
    assert _mask('"vx3kq9rt2mlpw8nb4yzc1a" "VX3KQ9RT2MLPW8NB4YZC1A"') == '"<id>" "<id>"'
    assert _mask("idempotency_key_reused foundation-12") == \
        "idempotency_key_reused foundation-12"
    assert _mask("2026-11-29T16:04:00.123Z") == "<time>"
    assert _prepare(["curl -sN --max-time 2 http://127.0.0.1:8000/x"], "http://h:1") == \
        "curl -sN --max-time 2 http://h:1/x || [ $? -eq 28 ]"


@pytest.mark.parametrize("document", list(TOURS))
def test_the_tours_speak_of_the_api_not_of_python_names(document):
    # Clients read GET /v1/variants (autoplay_rule, hint_rule), not the engine's code.
    text = (ROOT / document).read_text()
    for name in ("is_safe_home", "safe_moves", "endgame_line"):
        assert name not in text, name


def test_the_api_tour_says_which_setting_its_daily_part_needs():
    # The tour runs against a server that takes any account for ranked play; a reader's
    # `make run` does not unless told, and the tour says so.
    assert f"DAILY_ACCOUNT_RULE={API_ENV['DAILY_ACCOUNT_RULE']} make run" in \
        (ROOT / "docs/api-tour.md").read_text()
