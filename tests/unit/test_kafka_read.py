"""How a Kafka backlog is cut into ranges and slices for Spark's tasks (no broker, no Spark)."""

import itertools

import pytest

from spark_backend.kafka_read import MIN_SLICE, Backlog, backlog_ranges, read_failure, slices


def test_a_backlog_holds_at_most_a_batch_in_proportion():
    assert backlog_ranges({0: (10, 110), 1: (5, 5), 2: (0, 300)}, 1000) == ((0, 10, 110), (2, 0, 300))
    # Cut down in proportion; a partition with a little backlog still moves.
    assert backlog_ranges({0: (0, 1000), 1: (0, 3000), 2: (7, 8)}, 400) == ((0, 0, 99), (1, 0, 299), (2, 7, 8))
    assert backlog_ranges({}, 10) == ()


def test_slices_keep_every_core_busy_and_cover_each_offset_once():
    one = slices(((0, 100, 100 + 4 * MIN_SLICE),), 2)
    assert one == [(0, 100, 100 + 2 * MIN_SLICE), (0, 100 + 2 * MIN_SLICE, 100 + 4 * MIN_SLICE)]
    # Small ranges are not cut below MIN_SLICE: a consumer per slice costs a connection.
    assert slices(((0, 0, MIN_SLICE), (1, 0, 10)), 8) == [(0, 0, MIN_SLICE), (1, 0, 10)]
    uneven = ((0, 0, 7 * MIN_SLICE + 3), (1, 50, 50 + MIN_SLICE // 2), (2, 9, 10))
    cut = slices(uneven, 4)
    for p, start, end in uneven:
        mine = sorted((s, e) for q, s, e in cut if q == p)
        assert mine[0][0] == start and mine[-1][1] == end
        assert all(a[1] == b[0] for a, b in itertools.pairwise(mine)), mine  # contiguous, no overlap
    assert len(cut) <= 4 + len(uneven)
    assert all(e - s >= MIN_SLICE // 2 for p, s, e in cut if p == 0)


def test_backlog_counts_offsets_and_gives_the_next_ones():
    backlog = Backlog({"bootstrap.servers": "x"}, "t", ((0, 10, 20), (3, 0, 5)))
    assert backlog.num_rows == 15
    assert backlog.next_offsets() == {"0": 20, "3": 5}


def test_a_read_failure_is_found_in_the_spark_error_that_carries_it():
    spark_error = ('An exception was thrown from the Python worker.\nTraceback (most recent call last):\n'
                   '  File "kafka_read.py", line 150, in read_range\n'
                   'RuntimeError: kafka topic "t" partition 1: no record after offset 9 in 30 s\n\n'
                   '\tat org.apache.spark.api.python...')
    assert read_failure(RuntimeError(spark_error)) == 'kafka topic "t" partition 1: no record after offset 9 in 30 s'
    assert read_failure(ValueError("division by zero")) is None


def test_the_threshold_option_takes_counts_only(capsys):
    from server.cli import _parser

    assert _parser().parse_args(["serve", "--kafka-spark-reads", "0"]).kafka_spark_reads == 0
    assert "kafka_spark_reads" not in _parser().parse_args(["serve"])  # the runner's default applies
    for bad in ("-1", "many", "1.5"):
        with pytest.raises(SystemExit):
            _parser().parse_args(["serve", "--kafka-spark-reads", bad])
        err = capsys.readouterr().err
        assert "--kafka-spark-reads" in err and f"not '{bad}'" in err, err
