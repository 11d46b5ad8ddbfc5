# The service's image (api, events and worker of both compose files).  The base image is
# a build argument: a private mirror's copy of python:3.11-slim works as well.
ARG PYTHON_IMAGE=python:3.11-slim

# Stage 1: the wheel of the service, built from pyproject.toml, README.md, openapi.yaml
# and service/ alone (service/openapi.yaml links to the top-level document; the wheel
# holds it as a file).
FROM ${PYTHON_IMAGE} AS wheel
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md openapi.yaml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires']))" > /tmp/build-requirements.txt \
    && pip install -r /tmp/build-requirements.txt
COPY service ./service
RUN pip wheel --no-deps --no-build-isolation --wheel-dir /wheel .

# Stage 2: the pinned dependencies, then that wheel; no source tree.
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOST=0.0.0.0 \
    PORT=8000

RUN useradd --system --uid 10001 --user-group --no-create-home app \
    && mkdir -p /run/patience && chown app:app /run/patience

WORKDIR /app
# The pinned dependencies first, from pyproject.toml alone: a change of the code keeps
# this layer and installs only the service's wheel.
COPY pyproject.toml /tmp/pyproject.toml
RUN python -c "import tomllib; project = tomllib.load(open('/tmp/pyproject.toml', 'rb')); print('\n'.join(project['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt && rm /tmp/requirements.txt /tmp/pyproject.toml
COPY --from=wheel /wheel /tmp/wheel
RUN pip install --no-deps /tmp/wheel/*.whl && rm -rf /tmp/wheel

USER app
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=2)"]
CMD ["gunicorn", "-c", "python:service.runtime.request_group", "service.app:create_app()"]
