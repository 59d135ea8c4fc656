"""Shared fixtures: one real server (and so one Spark session) per test module."""

from __future__ import annotations

import psycopg
import pytest

from tests.support import running_server


@pytest.fixture(scope="module")
def server():
    with running_server() as proc:
        yield proc


@pytest.fixture
def conn(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        yield c
