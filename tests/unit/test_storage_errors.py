"""Disk and Spark read errors as a client sees them: a SQLSTATE and a plain message, never
Python's or py4j's text."""

from __future__ import annotations

import errno

import pytest

from spark_backend.errors import storage_error, translate_spark_error

PY4J_READ_FAILURE = """An error occurred while calling o47.collectToPython.
: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file \
file:///data/collections/u7/1795636263050-1e453c2df922.parquet.  SQLSTATE: KD001
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(QueryExecutionErrors.scala:920)
Caused by: org.apache.parquet.io.ParquetDecodingException: Can not read value at 0 in block -1 in file \
file:/data/collections/u7/1795636263050-1e453c2df922.parquet
Caused by: org.apache.parquet.io.ParquetDecodingException: could not verify page integrity, CRC checksum \
verification failed
\tat org.apache.parquet.hadoop.ParquetFileReader$Chunk.verifyCrc(ParquetFileReader.java:1845)
"""


class Py4JJavaError(Exception):
    pass


def test_a_spark_read_of_a_damaged_data_file_is_xx001_naming_the_file():
    err = translate_spark_error(Py4JJavaError(PY4J_READ_FAILURE))
    assert err.sqlstate == "XX001"
    assert err.message == ('data file collections/u7/1795636263050-1e453c2df922.parquet of table "u7" is damaged: '
                           "could not verify page integrity, CRC checksum verification failed")
    assert err.table == "u7"  # the coordinator puts the table's name in its place


def test_a_missing_data_file_is_xx001():
    text = ("An error occurred while calling o9.toArrow.\n: org.apache.spark.SparkException: "
            "[FAILED_READ_FILE.FILE_NOT_EXIST] File file:/data/collections/u2/5-abc.parquet does not exist.")
    err = translate_spark_error(Py4JJavaError(text))
    assert (err.sqlstate, err.message) == (
        "XX001", 'data file collections/u2/5-abc.parquet of table "u2" is damaged: the file is missing')


def test_other_spark_failures_keep_the_error_not_py4j_words():
    text = ("An error occurred while calling o12.collectToPython.\n"
            ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed\n"
            "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2898)\n")
    err = translate_spark_error(Py4JJavaError(text))
    assert err.message == "Job aborted due to stage failure: Task 0 in stage 3.0 failed"
    assert "o12" not in err.message and "py4j" not in err.message.lower()


def test_disk_errors_are_58030_or_53100_with_a_plain_message():
    full = translate_spark_error(OSError(errno.ENOSPC, "No space left on device"))
    assert (full.sqlstate, full.message) == ("53100", "could not read the data directory: No space left on device")
    broken = storage_error(OSError(errno.EIO, "Input/output error"), "fsync the log", fatal=True)
    assert (broken.sqlstate, broken.message, broken.fatal) == ("58030", "could not fsync the log: Input/output error",
                                                               True)


@pytest.mark.parametrize(("text", "sqlstate", "words"), [
    # as it reaches us from an executor: py4j's words around the cause chain
    (("An error occurred while calling o43.collectToPython.\n: org.apache.spark.SparkException: "
     "Exception thrown in awaitResult:\nCaused by: org.apache.spark.SparkException: "
     "[RECURSION_LEVEL_LIMIT_EXCEEDED] Recursion level limit 10000 reached but query has not exhausted"),
     "54001", "WITH RECURSIVE ran more iterations than the 10,000 Spark allows"),
    ("Exception thrown in awaitResult:\nCaused by: [RECURSION_ROW_LIMIT_EXCEEDED] Recursion row limit 1000000",
     "54001", "WITH RECURSIVE gave more rows than the 1,000,000 Spark allows"),
])
def test_spark_s_recursion_limits_are_statement_too_complex(text, sqlstate, words):
    # PostgreSQL has no such limit: Spark's is said plainly, not as XX000 "awaitResult"
    err = translate_spark_error(RuntimeError(text))
    assert (err.sqlstate, err.message) == (sqlstate, words)


_AWAIT = ("An error occurred while calling o43.collectToPython.\n: org.apache.spark.SparkException: "
          "Exception thrown in awaitResult:\nCaused by: org.apache.spark.SparkArithmeticException: ")


@pytest.mark.parametrize(("cause", "sqlstate", "words"), [
    # raised in a scalar subquery, which Spark runs apart from the query around it
    ("[DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0. SQLSTATE: 22012",
     "22012", "division by zero"),
    (('[CAST_INVALID_INPUT] The value \'x\' of the type "STRING" cannot be cast to "INT" because it is malformed. '
     "SQLSTATE: 22018"), "22P02", 'invalid input syntax for type integer: "x"'),
    ("[USER_RAISED_EXCEPTION] sparkwire:42P01:relation \"gone\" does not exist SQLSTATE: P0001",
     "42P01", 'relation "gone" does not exist'),
    ("[USER_RAISED_EXCEPTION] sparkwire:2201f:cannot take square root of a negative number SQLSTATE: P0001",
     "2201F", "cannot take square root of a negative number"),
])
def test_errors_wrapped_by_a_subquery_keep_postgresql_s_words(cause, sqlstate, words):
    err = translate_spark_error(RuntimeError(_AWAIT + cause))
    assert (err.sqlstate, err.message) == (sqlstate, words)


AWAIT = ("An error occurred while calling o331.collectToPython.\n"
         ": org.apache.spark.SparkException: Exception thrown in awaitResult: \n"
         "\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:53)\n"
         "Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: lost task\n"
         "Caused by: java.lang.IllegalStateException: something inside went wrong\n")


def test_a_wrapped_failure_says_its_innermost_cause():
    err = translate_spark_error(Py4JJavaError(AWAIT))
    assert (err.sqlstate, err.message) == ("XX000", "something inside went wrong")


@pytest.mark.parametrize("cause, state", [
    ("java.util.concurrent.TimeoutException: Could not execute broadcast in 300 secs.", "57014"),
    ("java.lang.OutOfMemoryError: Java heap space", "53200"),
    (("org.apache.spark.sql.execution.OutOfMemorySparkException: Not enough memory to build and broadcast the "
     "table to all worker nodes."), "53200"),
])
def test_spark_out_of_resources_is_postgresqls_class(cause, state):
    err = translate_spark_error(Py4JJavaError(AWAIT + f"Caused by: {cause}\n"))
    assert err.sqlstate == state and "Spark" in err.message
