# sparkwire in a container: Debian bookworm, Python 3.11, Java 17 JRE.
#   docker build -t sparkwire .
#   docker run -d -p 6875:6875 -p 6876:6876 -v sparkwire-data:/data sparkwire
# BASE is any Debian bookworm image; scripts/build-image.sh --local-base builds
# one with debootstrap when python:3.11-slim-bookworm cannot be pulled (bookworm's
# own python3 is 3.11; scripts/install.sh installs it and the JRE when missing).
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

WORKDIR /opt/sparkwire
COPY pyproject.toml README.md ./
COPY scripts ./scripts
COPY server ./server
COPY planner ./planner
COPY spark_backend ./spark_backend
# The same install script the Makefile runs (runtime part only).
RUN PIP_NO_CACHE_DIR=1 bash scripts/install.sh --runtime-only --venv /opt/venv \
    && rm -rf build *.egg-info \
    && apt-get clean && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 sparkwire \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /data --shell /usr/sbin/nologin sparkwire \
    && mkdir -p /data && chown sparkwire:sparkwire /data

# LANG: the JVM (Java 17) takes its default charset from it; POSIX would be ASCII.
ENV PATH=/opt/venv/bin:$PATH PYSPARK_PYTHON=/opt/venv/bin/python PYSPARK_DRIVER_PYTHON=/opt/venv/bin/python \
    LANG=C.UTF-8 HOME=/data
USER sparkwire
# The working directory is where Spark puts anything it keeps relative to it
# (spark-warehouse): the writable data volume, not the root-owned source tree.
WORKDIR /data
VOLUME ["/data"]
# 6875: pgwire; 6876: Prometheus /metrics and /health (bound to --host as well).
EXPOSE 6875 6876
# Healthy once Spark answers queries (/health is 503 while the SparkSession starts:
# 13 s on an idle 2-core machine, 60 s on a loaded one). Needs --metrics-port 6876.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:6876/health', timeout=3)"]
# Extra arguments go after the image name: --spark-master, --spark-conf, --password-file...
ENTRYPOINT ["sparkwire", "serve", "--host", "0.0.0.0", "--data-dir", "/data"]
