FROM python:3.11-slim

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
COPY . .
RUN pip install . && rm -rf build *.egg-info

USER app
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=2)"]
CMD ["gunicorn", "-c", "gunicorn.conf.py", "service.app:create_app()"]
