# The service's image (api, events and worker of both compose files).  The base image is
# a build argument: a private mirror's copy of python:3.11-slim works as well.
ARG PYTHON_IMAGE=python:3.11-slim
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    OPENAPI_PATH=/app/openapi.yaml

RUN useradd --system --uid 10001 --user-group --no-create-home app \
    && mkdir -p /run/patience && chown app:app /run/patience

WORKDIR /app
# The pinned dependencies and the build's requirements first, from pyproject.toml
# alone: a change of the code keeps this layer and installs only the service itself.
COPY pyproject.toml .
RUN python -c "import tomllib; project = tomllib.load(open('pyproject.toml', 'rb')); print('\n'.join(project['project']['dependencies'] + project['build-system']['requires']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY . .
RUN pip install --no-deps --no-build-isolation . && rm -rf build *.egg-info

USER app
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=2)"]
CMD ["gunicorn", "-c", "python:service.runtime.request_group", "service.app:create_app()"]
