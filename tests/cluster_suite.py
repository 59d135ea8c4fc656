"""The tests that run again on a real Spark cluster (test_spark_cluster.py) and through Spark
Connect (test_spark_connect.py): the table and SUBSCRIBE tests of test_sql.py and
test_subscribe.py, with the fixtures they use, and the Kafka `broker` fixture.

Each of those modules takes them with `from tests.cluster_suite import *`, so that pytest
collects them there, against that module's own `server` fixture.
"""

from __future__ import annotations

import pytest

from tests.integration.test_sql import (
    people,
    test_insert_select,
    test_issue_example,
    test_queries,
    test_select_as_of,
    test_transaction_commits_atomically,
    test_update_and_delete_row_counts,
    test_views_and_drop,
    typed,
)
from tests.integration.test_sql import (
    test_every_type_reads_back_through_psycopg as test_every_type_reads_back,
)
from tests.integration.test_subscribe import (
    clock,
    shape_run,
    test_as_of_replays_history_and_up_to_ends,
    test_copy_and_bare_subscribe_end_with_up_to,
    test_copy_subscribe_streams_rows_until_cancelled,
    test_declare_fetch_forms,
    test_fetch_without_timeout_waits_for_a_row,
    test_stream_extended_protocol_stopped_by_cancel,
    test_update_is_retraction_and_insertion_at_one_timestamp,
)
from tests.spark_cluster import kafka_broker

# The shapes SUBSCRIBE runs here: one of each strategy and plan (linear, per-group aggregate,
# join, recompute, a view); every shape runs locally in test_subscribe.py.
SHAPES_RUN = ["table", "view", "filter", "inner_join", "group_by", "union", "scalar_subquery", "rollup"]


@pytest.mark.parametrize("shape", SHAPES_RUN)
def test_subscribe_shape_matches_select_as_of(shape_run, shape):
    """SUBSCRIBE over a table, a view and a query of each strategy equals SELECT AS OF at every timestamp."""
    assert shape_run[shape] == [], "\n".join(shape_run[shape])


@pytest.fixture(scope="module")
def broker(server):
    with kafka_broker(server) as b:
        yield b


__all__ = [
    "SHAPES_RUN",
    "broker",
    "clock",
    "people",
    "shape_run",
    "test_as_of_replays_history_and_up_to_ends",
    "test_copy_and_bare_subscribe_end_with_up_to",
    "test_copy_subscribe_streams_rows_until_cancelled",
    "test_declare_fetch_forms",
    "test_every_type_reads_back",
    "test_fetch_without_timeout_waits_for_a_row",
    "test_insert_select",
    "test_issue_example",
    "test_queries",
    "test_select_as_of",
    "test_stream_extended_protocol_stopped_by_cancel",
    "test_subscribe_shape_matches_select_as_of",
    "test_transaction_commits_atomically",
    "test_update_and_delete_row_counts",
    "test_update_is_retraction_and_insertion_at_one_timestamp",
    "test_views_and_drop",
    "typed",
]
