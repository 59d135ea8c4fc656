#!/usr/bin/env bash
# Install what sparkwire needs on a Debian machine: Java 17 (for Spark), the
# PostgreSQL 15 server (tests and benchmarks compare against it), a venv with
# the package. The Makefile and the Dockerfile both run this script.
#   scripts/install.sh [--runtime-only] [--venv DIR]
set -euo pipefail

runtime_only=0
venv=".venv"
while [ $# -gt 0 ]; do
  case "$1" in
    --runtime-only) runtime_only=1 ;;
    --venv) venv="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

apt_packages=()
command -v java >/dev/null 2>&1 || apt_packages+=(openjdk-17-jre-headless)
if [ "$runtime_only" = 0 ]; then
  [ -x /usr/lib/postgresql/15/bin/postgres ] || apt_packages+=(postgresql-15)
  command -v psql >/dev/null 2>&1 || apt_packages+=(postgresql-client-15)
  # Driver tests: pgjdbc, compiled against and run by the test with javac.
  [ -f /usr/share/java/postgresql.jar ] || apt_packages+=(libpostgresql-jdbc-java)
  command -v javac >/dev/null 2>&1 || apt_packages+=(default-jdk-headless)
  # Driver tests: node-postgres, pg-cursor and pg-copy-streams (tests/node, npm ci below).
  command -v npm >/dev/null 2>&1 || apt_packages+=(nodejs npm)
fi
# Any python3 will do if it has venv (python:3.11-slim has it in /usr/local/bin);
# Debian's own needs python3-venv beside it.
if ! command -v python3 >/dev/null 2>&1; then
  apt_packages+=(python3 python3-venv)
elif ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  apt_packages+=(python3-venv)
fi
# pip checks PyPI's certificate against the system store on Debian; a minimal
# (debootstrap minbase) system has none.
[ -f /etc/ssl/certs/ca-certificates.crt ] || apt_packages+=(ca-certificates)
if [ ${#apt_packages[@]} -gt 0 ]; then
  echo "installing with apt: ${apt_packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  # Slim images drop /usr/share/man; the JRE's postinst links a man page into it.
  $sudo_cmd mkdir -p /usr/share/man/man1
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${apt_packages[@]}"
fi

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --upgrade pip
if [ "$runtime_only" = 0 ]; then
  "$venv/bin/pip" install -q -e ".[test]"
  (cd tests/node && npm ci --no-audit --no-fund --silent)
else
  "$venv/bin/pip" install -q .
fi
