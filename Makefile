PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
export PORT

.DEFAULT_GOAL := test
.PHONY: .venv test lint run bench clean clean-data secrets

# The venv is (re)installed whenever pyproject.toml is newer than the stamp.
.venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The suite runs on TEST_PROCESSES processes (pytest-xdist; "auto": one per core); the
# deploy tests (one Docker Engine) run one after another on one of them.
TEST_PROCESSES ?= auto

test: .venv secrets
	$(BIN)/pytest -n $(TEST_PROCESSES) $(PYTEST_ARGS)

# The compose files' secrets (docs/deployment.md, "Secrets"): the secret key, the
# passwords of Redis' default user and of its user `patience` (the service's), and the
# password of HAProxy's stats page (cluster file), random, made once and kept (the folder
# is the owner's alone; the files are readable by the containers' users, which compose
# mounts them for).
secrets: secrets/secret_key secrets/redis_password secrets/redis_service_password \
	secrets/stats_password

secrets/%:
	mkdir -p -m 700 secrets
	$(PYTHON) -I -c "import secrets; print(secrets.token_urlsafe(32))" > $@.new
	chmod 644 $@.new && mv $@.new $@

lint: .venv
	$(BIN)/ruff check .

# Starts its own Redis (data in var/redis) unless REDIS_URL is set, then gunicorn on
# 127.0.0.1:$(PORT).
run: .venv
	$(BIN)/python -m devtools.devserver

bench: .venv
	@if [ -d bench ]; then $(BIN)/python -m bench $(BENCH_ARGS); \
	else echo "bench/ does not exist yet: nothing to run" >&2; exit 1; fi

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .hypothesis tests/artifacts
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# Removes the data of the Redis that `make run` starts.
clean-data:
	rm -rf var
