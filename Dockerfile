# sparkwire in a container: Debian bookworm, Python 3.11, Java 17 JRE.
#   docker build -t sparkwire .
#   docker run -p 6875:6875 -p 6876:6876 -v sparkwire-data:/data sparkwire
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
# 6875: pgwire; 6876: Prometheus /metrics and /health.
EXPOSE 6875 6876
# Healthy once Spark answers queries (/health is 503 while the SparkSession starts).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:6876/health', timeout=3)"
ENTRYPOINT ["sparkwire", "serve", "--host", "0.0.0.0", "--data-dir", "/data"]
