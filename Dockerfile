# sparkwire in a container: Debian bookworm, Python 3.11, Java 17 JRE.
#   docker build -t sparkwire .
#   docker run -p 6875:6875 -v sparkwire-data:/data sparkwire
FROM python:3.11-slim-bookworm

WORKDIR /opt/sparkwire
COPY pyproject.toml README.md ./
COPY scripts ./scripts
COPY server ./server
COPY planner ./planner
COPY spark_backend ./spark_backend
# The same install script the Makefile runs (runtime part only).
RUN bash scripts/install.sh --runtime-only --venv /opt/venv \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /data sparkwire \
    && mkdir -p /data && chown sparkwire /data

ENV PATH=/opt/venv/bin:$PATH PYSPARK_PYTHON=/opt/venv/bin/python
USER sparkwire
VOLUME ["/data"]
EXPOSE 6875
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s \
    CMD python -c "import socket; socket.create_connection(('127.0.0.1', 6875), 3)"
ENTRYPOINT ["sparkwire", "serve", "--host", "0.0.0.0", "--data-dir", "/data"]
