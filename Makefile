PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
export PORT

.DEFAULT_GOAL := test
.PHONY: .venv test lint run bench clean clean-data secrets

# The venv is (re)installed whenever pyproject.toml is newer than the stamp: by uv
# (pinned here, itself installed by pip), which installs the project and its pinned
# dependencies in seconds where pip takes most of a minute; bytecode compiled at once.
UV_REQUIREMENT := uv==0.13.9

.venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet '$(UV_REQUIREMENT)'
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev]'
	touch $@

# The suite runs on TEST_PROCESSES processes (pytest-xdist; "auto": one per core); the
# deploy tests (one Docker Engine) run one after another on one of them.
TEST_PROCESSES ?= auto

# The project's modules are compiled once (into __pycache__, which git and Docker ignore)
# even where PYTHONDONTWRITEBYTECODE is set: the suite starts hundreds of processes
# (gunicorn's, the solver's worker, the harness's) that each import them, a third
# sooner so (0.40 s of CPU against 0.58 s for the app's here).
unexport PYTHONDONTWRITEBYTECODE

test: .venv secrets
	$(BIN)/pytest -n $(TEST_PROCESSES) $(PYTEST_ARGS)

# The compose files' secrets (docs/deployment.md, "Secrets"): the secret key, the
# passwords of Redis' default user and of its user `patience` (the service's), and the
# password of HAProxy's stats page (cluster file), random; and the cluster's TLS files
# (below).  Each made once and kept (the folder is the owner's alone; the files are
# readable by the containers' users, which compose mounts them for).
secrets: secrets/secret_key secrets/redis_password secrets/redis_service_password \
	secrets/stats_password secrets/redis_tls_ca secrets/redis_tls_cert secrets/redis_tls_key

secrets/%:
	mkdir -p -m 700 secrets
	$(PYTHON) -I -c "import secrets; print(secrets.token_urlsafe(32))" > $@.new
	chmod 644 $@.new && mv $@.new $@

# The cluster file's bus and replication go over TLS, each end showing a certificate of
# the operator's own CA: the CA (secrets/redis_tls_ca, its key secrets/redis_tls_ca_key,
# which no container mounts: keep it to sign more) and the nodes' certificate and key
# signed by it (secrets/redis_tls_cert, secrets/redis_tls_key), EC P-256, TLS_DAYS days.
TLS_DAYS ?= 3650

secrets/redis_tls_ca:
	mkdir -p -m 700 secrets
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days $(TLS_DAYS) \
		-subj "/CN=Patience Server Redis CA" -keyout secrets/redis_tls_ca_key.new -out $@.new
	chmod 600 secrets/redis_tls_ca_key.new && chmod 644 $@.new
	mv secrets/redis_tls_ca_key.new secrets/redis_tls_ca_key && mv $@.new $@

secrets/redis_tls_cert: secrets/redis_tls_ca
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=Patience Server Redis node" -keyout secrets/redis_tls_key.new \
		-out secrets/redis_tls_cert.csr
	openssl x509 -req -in secrets/redis_tls_cert.csr -CA secrets/redis_tls_ca \
		-CAkey secrets/redis_tls_ca_key -set_serial 0x$$(openssl rand -hex 16) \
		-days $(TLS_DAYS) -out $@.new
	rm secrets/redis_tls_cert.csr
	chmod 644 secrets/redis_tls_key.new $@.new
	mv secrets/redis_tls_key.new secrets/redis_tls_key && mv $@.new $@

# Made with the certificate.
secrets/redis_tls_key: secrets/redis_tls_cert
	@test -s $@ || { echo "$@ is missing: remove secrets/redis_tls_cert too, then" \
		"make secrets makes both" >&2; exit 1; }

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
