"""Shared fixtures: one real server (and so one Spark session) per test module."""

from __future__ import annotations

import psycopg
import pytest

from tests.support import ServerProcess


@pytest.fixture(scope="module")
def server():
    proc = ServerProcess().start()
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def conn(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        yield c
