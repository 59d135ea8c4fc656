"""sparkwire through Spark Connect (issue 7): `--spark-master sc://…`.

A Spark Connect server is started here from the pyspark package's jars (local[2]
inside it); the sparkwire server holds only a Connect client session. The table and
SUBSCRIBE tests below are the ones of test_sql.py and test_subscribe.py, imported so
that pytest runs them against this module's `server`; the last tests check that the
work really went through the Connect server. The data directory is the only state
the two processes share.
"""

from __future__ import annotations

import re

import psycopg
import pytest
from psycopg.types.string import TextLoader

# The shared table, SUBSCRIBE and Kafka tests and fixtures, collected and run here.
from tests.cluster_suite import *
from tests.spark_cluster import (
    SparkDaemons,
    check_backlog_read_by_spark,
    check_kafka_decoding,
    check_upsert_ingests,
    get_json,
    spark_server,
)


class ConnectServer:
    def __init__(self, daemons: SparkDaemons, port: int, ui_port: int) -> None:
        self.daemons = daemons
        self.port = port
        self.url = f"sc://127.0.0.1:{port}"
        self.api = f"http://127.0.0.1:{ui_port}/api/v1"

    def jobs(self) -> list[dict]:
        [app] = get_json(f"{self.api}/applications")
        return get_json(f"{self.api}/applications/{app['id']}/jobs")


@pytest.fixture(scope="module")
def connect_server():
    daemons = SparkDaemons()
    try:
        port, ui_port = daemons.start_connect(master="local[2]")
        yield ConnectServer(daemons, port, ui_port)
    finally:
        daemons.stop()


@pytest.fixture(scope="module")
def server(connect_server):
    with spark_server(connect_server.url) as proc:
        yield proc


# -- the work went through Spark Connect -------------------------------------------------

# Connect prefixes a client's tags with its session: ..._Session_<id>_Tag_<tag>.
SPARKWIRE_TAG = re.compile(r"^SparkConnect_SessionTag_.*_Tag_sparkwire-\d+$")


def _tags(job: dict) -> list[str]:
    return job.get("jobTags") or []


def test_queries_run_as_jobs_of_the_connect_server(connect_server, server, conn):
    """Each statement's Spark jobs carry its cancellation tag (`sparkwire-<n>`), and the
    Connect server lists them among its own jobs."""
    before = {j["jobId"] for j in connect_server.jobs()}
    conn.execute("CREATE TABLE via_connect (k int, g text)")
    conn.execute("INSERT INTO via_connect VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    rows = conn.execute("SELECT g, sum(k) FROM via_connect GROUP BY g ORDER BY g").fetchall()
    assert rows == [("a", 4), ("b", 2)]
    new = [j for j in connect_server.jobs() if j["jobId"] not in before]
    assert new, "the query started no job on the Connect server"
    tagged = [j for j in new if any(SPARKWIRE_TAG.match(t) for t in _tags(j))]
    assert tagged, f"no job carries a sparkwire tag: {[_tags(j) for j in new]}"
    assert all(j["status"] == "SUCCEEDED" for j in tagged), tagged


def test_subscribe_micro_batches_run_on_the_connect_server(connect_server, server, conn):
    conn.execute("CREATE TABLE sub_connect (k int)")
    conn.execute("INSERT INTO sub_connect VALUES (1)")
    with conn.transaction():
        conn.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT count(*) AS n FROM sub_connect)")
        first = conn.execute("FETCH ALL c WITH (timeout = '5s')").fetchall()
        before = len(connect_server.jobs())
        with psycopg.connect(server.dsn, autocommit=True) as writer:
            writer.execute("INSERT INTO sub_connect VALUES (2)")
        changes = []
        while len(changes) < 2:
            got = conn.execute("FETCH ALL c WITH (timeout = '5s')").fetchall()
            assert got, f"no change after the insert; so far {changes}"
            changes += got
    assert [(d, n) for _, d, n in first] == [(1, 1)]
    assert sorted((d, n) for _, d, n in changes) == [(-1, 1), (1, 2)]
    assert len(connect_server.jobs()) > before, "the micro-batch ran no job on the Connect server"


def test_kafka_records_decoded_by_the_connect_server(conn, broker):
    """JSON and CSV records are decoded in the Connect server's Python workers."""
    check_kafka_decoding(conn, broker)


def test_kafka_upsert_through_connect(conn, broker):
    check_upsert_ingests(conn, broker)


def test_kafka_backlog_read_by_the_connect_server(conn, server, broker):
    check_backlog_read_by_spark(conn, server, broker)


def test_jsonb_functions_run_on_the_connect_server(conn):
    """The jsonb functions' UDFs are registered in the Connect session too, and their
    PostgreSQL errors come back with their SQLSTATE."""
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.execute("CREATE TABLE jdocs (id int, j jsonb)")
    conn.execute("""INSERT INTO jdocs VALUES (1, '{"b": [1, 2], "a": null}'), (2, '[3]')""")
    assert conn.execute("SELECT jsonb_build_object('k', id, 'j', jsonb_strip_nulls(j)), jsonb_set(j, '{0}', '9') "
                        "FROM jdocs ORDER BY id").fetchall() == [
        ('{"j": {"b": [1, 2]}, "k": 1}', '{"0": 9, "a": null, "b": [1, 2]}'), ('{"j": [3], "k": 2}', "[9]")]
    assert conn.execute("SELECT d.id, e.key, e.value FROM jdocs d, jsonb_each(d.j) e WHERE d.id = 1 ORDER BY 2").fetchall() == [
        (1, "a", "null"), (1, "b", "[1, 2]")]
    assert conn.execute("SELECT jsonb_agg(j ORDER BY id) FROM jdocs").fetchone() == ('[{"a": null, "b": [1, 2]}, [3]]',)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="cannot delete from object using integer index"):
        conn.execute("SELECT j - 0 FROM jdocs")


def test_a_restarted_connect_server_gets_a_new_session(connect_server, server, conn):
    """A Connect server forgets its sessions when it restarts: sparkwire opens a new one,
    with its session settings (a TIME column needs spark.sql.timeType.enabled), and the
    statement that found the session gone still succeeds."""
    import datetime as dt

    conn.execute("CREATE TABLE across_restart (k int, at time)")
    conn.execute("INSERT INTO across_restart VALUES (1, '12:34:56'), (2, '01:02:03')")
    assert conn.execute("SELECT count(*) FROM across_restart").fetchone() == (2,)
    connect_server.daemons.restart_connect(connect_server.port)
    rows = conn.execute("SELECT k, at FROM across_restart WHERE k > 0 ORDER BY k").fetchall()
    assert rows == [(1, dt.time(12, 34, 56)), (2, dt.time(1, 2, 3))]
    conn.execute("UPDATE across_restart SET at = '23:00:00' WHERE k = 2")
    assert conn.execute("SELECT at FROM across_restart WHERE k = 2").fetchone() == (dt.time(23, 0),)
    assert "event=spark_reconnect" in server.log_path.read_text(errors="replace")
