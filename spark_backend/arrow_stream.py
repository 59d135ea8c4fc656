"""A large result from Spark to the server a record batch at a time, paced by the reader.

`toArrow()` collects a whole result, and Spark's own Arrow collection writes every
partition to its socket from the scheduler's thread (a reader that pauses would stall every
job: spark_backend.spill). Here a result is served as `toLocalIterator` serves rows: a
thread of its own on the driver runs one job per partition when the reader asks for it
(and the next one ahead), and writes that partition's Arrow batches to a local socket the
reader drains at its own pace. The server holds one record batch; a reader that stops
blocks only that serving thread.

Classic (py4j) sessions only: under Spark Connect `open_stream` answers None and callers
spill instead. Only types whose Arrow form is fixed (those a spill keeps) are streamed, as
the batches arrive without a schema and are read with the one `to_arrow_schema` gives.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import pyarrow as pa
from pyspark.serializers import NoOpSerializer, read_int, write_int
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.util import _create_local_socket

from spark_backend import spill


def streamable(spark: SparkSession, df: DataFrame) -> bool:
    """Whether `df` can be served batch by batch: a classic session, Arrow types we know."""
    if not hasattr(df, "_jdf") or not hasattr(spark, "_jsparkSession"):
        return False  # Spark Connect
    large = spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false").lower() == "true"
    return not large and spill.spillable(df)


class BatchStream:
    """One result's record batches, partition by partition; `close()` lets go early."""

    def __init__(self, spark: SparkSession, df: DataFrame) -> None:
        self.schema = to_arrow_schema(df.schema, timezone="UTC")
        self._spark = spark
        self._jrdd = df._jdf.toArrowBatchRdd()  # plans now: the views the query read may go after this
        self.partitions = self._jrdd.getNumPartitions()
        self._file = self._sock = None  # the serving thread's socket, from the first read on
        self._more = True  # the serving thread has partitions left to send

    def coalesce(self, partitions: int) -> None:
        """Serve the result in fewer partitions (one job each), if it has not started."""
        if self._sock is None and 0 < partitions < self.partitions:
            # Dataset.toArrowBatchRdd is a Scala RDD, whose coalesce py4j cannot call (default
            # and implicit arguments): through its Java wrapper, then back.
            self._jrdd = self._jrdd.toJavaRDD().coalesce(partitions, False).rdd()
            self.partitions = partitions

    def _serve(self) -> None:
        port, secret, self._server = self._spark.sparkContext._jvm.PythonRDD.toLocalIteratorAndServe(self._jrdd, True)
        self._file, self._sock = _create_local_socket((port, secret))

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        serializer = NoOpSerializer()
        if self._more and self._sock is None:
            self._serve()
        while self._more:
            write_int(1, self._file)  # the next partition, please
            self._file.flush()
            status = read_int(self._file)
            if status == 1:
                for payload in serializer.load_stream(self._file):
                    yield pa.ipc.read_record_batch(pa.py_buffer(payload), self.schema)
            else:
                self._more = False
                if status == -1:
                    self._server.getResult()  # raises the job's error
        self.close()

    def close(self) -> None:
        """Hang up: the serving thread's next write fails and it ends (no draining here).
        Shut down first: that also wakes a read blocked on another thread."""
        self._more = False
        if self._sock is None:
            return  # never served: no job ran, nothing to hang up
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError, ValueError):
            self._file.close()
        self._sock.close()
