# The cloudadmin service image: docs/deployment.md.
# Build:  docker build -t cloudadmin .
# The same image runs `serve` (the default), `worker`, `migrate` and the other commands.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: the locked dependencies and the project into a virtual environment ---
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
# /opt/cloudadmin is what the runtime stage gets; /opt/build only builds the wheel.
RUN python -m venv /opt/cloudadmin && python -m venv /opt/build
WORKDIR /src
# The locks first, alone: these layers are rebuilt only when a lock changes, not on every
# change of the code. --require-hashes: nothing is installed that a lock did not pin.
COPY requirements.lock requirements-build.lock ./
RUN /opt/cloudadmin/bin/pip install --require-hashes -r requirements.lock \
 && /opt/build/bin/pip install --require-hashes -r requirements-build.lock
COPY pyproject.toml README.md ./
COPY src ./src
# The wheel is built with the locked setuptools (--no-build-isolation: no build
# environment of unpinned packages), then installed with --no-deps: everything it needs
# came from the lock above.
RUN /opt/build/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /tmp/wheels . \
 && /opt/cloudadmin/bin/pip install --no-deps /tmp/wheels/cloudadmin-*.whl \
 && /opt/cloudadmin/bin/pip check

# --- runtime: the interpreter and the environment, no build tools, not root ---
FROM ${PYTHON_IMAGE} AS runtime
# A fixed numeric id, so that orchestrators can verify "not root" and volumes can be
# prepared for it.
RUN groupadd --system --gid 10001 cloudadmin \
 && useradd --system --uid 10001 --gid cloudadmin --home-dir /var/lib/cloudadmin \
        --create-home --shell /usr/sbin/nologin cloudadmin
# The environment keeps its path from the build stage, where its scripts point.
COPY --from=build /opt/cloudadmin /opt/cloudadmin
ENV PATH=/opt/cloudadmin/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CLOUDADMIN_DATA_DIR=/var/lib/cloudadmin \
    CLOUDADMIN_BLOB_DIR=/var/lib/cloudadmin/blobs
RUN mkdir -p /var/lib/cloudadmin/blobs && chown -R 10001:10001 /var/lib/cloudadmin
WORKDIR /var/lib/cloudadmin
USER 10001:10001
EXPOSE 8000
# The slim image has no curl: the interpreter asks the liveness endpoint itself.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]
ENTRYPOINT ["cloudadmin"]
CMD ["serve", "--host", "0.0.0.0"]
