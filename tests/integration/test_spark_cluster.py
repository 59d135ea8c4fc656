"""sparkwire on a real standalone Spark cluster (issue 7): `--spark-master spark://…`.

A master and two workers (one core, 1 GiB each) are started here from the pyspark
package on 127.0.0.1; the server's driver runs in the server process and its
executors on the workers. The table and SUBSCRIBE tests below are the ones of
test_sql.py and test_subscribe.py, imported so that pytest runs them against this
module's `server`; the last tests check that the work really ran on the workers.
The data directory is the only state the driver and the executors share (here both
see it at the same local path).
"""

from __future__ import annotations

import re

import pytest

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

# Small enough for two one-core workers on a two-core machine.
EXECUTOR_CONF = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "768m",
    "spark.cores.max": "2",
    # Executors connect back to the driver: on this machine, at the loopback address.
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


@pytest.fixture(scope="module")
def cluster():
    daemons = SparkDaemons()
    try:
        standalone = daemons.start_standalone(workers=2, cores=1, memory="1g")
        yield daemons, standalone
    finally:
        daemons.stop()


@pytest.fixture(scope="module")
def server(cluster):
    _, standalone = cluster
    conf = [arg for key, value in EXECUTOR_CONF.items() for arg in ("--spark-conf", f"{key}={value}")]
    with spark_server(standalone.master_url, *conf) as proc:
        yield proc


# -- the work ran on the cluster ---------------------------------------------------------

FINISHED_TASK = re.compile(r"Finished task \S+ in stage \S+ \(TID \d+\)")


def _app(standalone) -> dict:
    [app] = [a for a in standalone.state()["activeapps"] if a["name"] == "sparkwire"]
    return app


def test_application_has_an_executor_on_each_worker(cluster, server):
    _, standalone = cluster
    app = _app(standalone)
    assert app["state"] == "RUNNING"
    assert app["cores"] == 2, app
    workers_with_executor = []
    for ui in standalone.worker_uis:
        executors = get_json(f"{ui}/json")["executors"]
        if any(e["appid"] == app["id"] for e in executors):
            workers_with_executor.append(ui)
    assert workers_with_executor == standalone.worker_uis


def test_queries_run_as_tasks_on_both_workers(cluster, server, conn):
    """Executors log each task they finish: a query through sparkwire adds tasks there,
    and over the module every worker's executor has run some."""
    daemons, standalone = cluster
    app_id = _app(standalone)["id"]

    def tasks() -> dict[str, int]:
        return {name: len(FINISHED_TASK.findall(text))
                for name, text in daemons.executor_logs().items() if f"/{app_id}/" in f"/{name}/"}

    before = tasks()
    conn.execute("CREATE TABLE on_cluster (k int, g text)")
    for i in range(4):  # several files, so the read has several partitions
        conn.execute(f"INSERT INTO on_cluster SELECT id, 'g' || (id % 3) FROM "
                     f"(VALUES ({i * 10}), ({i * 10 + 1}), ({i * 10 + 2})) AS v(id)")
    rows = conn.execute("SELECT g, count(*), sum(k) FROM on_cluster GROUP BY g ORDER BY g").fetchall()
    assert rows == [("g0", 4, 63), ("g1", 4, 64), ("g2", 4, 65)]
    after = tasks()
    assert len(after) == 2, f"expected one executor per worker, found logs {sorted(after)}"
    assert sum(after.values()) > sum(before.values()), (before, after)
    assert all(n > 0 for n in after.values()), f"a worker ran no task: {after}"


def test_kafka_records_decoded_by_executors(conn, broker):
    """JSON and CSV records are decoded in the executors' Python workers."""
    check_kafka_decoding(conn, broker)


def test_kafka_upsert_on_the_cluster(conn, broker):
    check_upsert_ingests(conn, broker)


def test_kafka_backlog_read_by_executors(conn, server, broker):
    check_backlog_read_by_spark(conn, server, broker)
