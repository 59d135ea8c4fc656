"""The one SparkSession of a server: started once, kept warm, shared by all sessions.

Spark calls block, so every one runs on a worker thread; the event loop only
awaits them. Each call gets a job group so that a CancelRequest can stop the
Spark jobs of exactly one statement.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from planner.errors import QUERY_CANCELED, SqlError
from spark_backend import float_math_udfs, float_udfs, interval_udfs, jsonb_udfs, numeric_udfs, string_udfs
from spark_backend.errors import RECURSION_LEVELS, RECURSION_ROWS, translate_spark_error

log = logging.getLogger("sparkwire.spark")

T = TypeVar("T")

# What executors run: the Kafka decoder and the mapInArrow steps live in spark_backend and use
# planner's codecs; nothing of server/ runs there (check_layers keeps it so).
_PACKAGES = ("planner", "spark_backend")

# Settings measured on 2-core machines (DESIGN.md): few shuffle partitions keep
# micro-batches cheap, Arrow moves rows 20x faster than collect(), no UI.
_SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.ansi.enabled": "true",
    # A decimal result whose precision would pass 38 keeps its scale and errs (22003) if the
    # value then does not fit, as PostgreSQL's exact numeric would rather than lose digits:
    # Spark's default rounds the scale down instead (an unconstrained numeric is held as
    # decimal(38,10), so 1.0000000001 + 1 came back as 2 and 4.31 * 16397.038491 as
    # 70671.235896).
    "spark.sql.decimalOperations.allowPrecisionLoss": "false",
    "spark.sql.timeType.enabled": "true",
    # WITH RECURSIVE: PostgreSQL has no limit (past Spark's: 54001, spark_backend.errors)
    "spark.sql.cteRecursionLevelLimit": str(RECURSION_LEVELS),
    "spark.sql.cteRecursionRowLimit": str(RECURSION_ROWS),
    "spark.sql.caseSensitive": "false",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.driver.memory": "4g",
    "spark.sql.files.openCostInBytes": "1048576",
    # Scans split into at least 16 pieces of at most 16 MB of files: a streamed result (a
    # SUBSCRIBE snapshot, spark_backend.arrow_stream) is served one partition at a time, so
    # its first rows wait for one small piece rather than a third of the table (1e7 rows:
    # about 3 s to the first row instead of 4.2-4.8), and two cores stay evenly busy.
    "spark.sql.files.minPartitionNum": "16",
    "spark.sql.files.maxPartitionBytes": str(16 << 20),
}

# Defence in depth behind the planner's allowlists (DESIGN.md, "Deny by default"): even SQL
# that got past them could not read `${env:...}`/`${system:...}` variables or query files
# by path (`csv.`/etc/passwd``, `IDENTIFIER('text.`...`')`). Both are session settings,
# so they hold on a Spark Connect server too.
HARDENING_CONF = {
    "spark.sql.variable.substitute": "false",
    "spark.sql.runSQLOnFiles": "false",
    "spark.sql.catalogImplementation": "in-memory",  # no Hive metastore_db/, no derby.log
}


def local_dirs_conf(data_dir: Path) -> dict[str, str]:
    """Where an embedded Spark keeps its files: under the data directory, not the working
    directory (`spark-warehouse/`) or anywhere else the server happens to start."""
    spark_dir = data_dir / "spark"
    return {"spark.sql.warehouse.dir": str(spark_dir / "warehouse"),
            "spark.local.dir": str(spark_dir / "local")}


def ship_code(spark, connect: bool, folder: Path) -> None:
    """Send sparkwire's own packages to wherever Spark runs Python.

    A Python function Spark runs for us (the Kafka decoder, a mapInArrow) is pickled
    with references to our modules; executors on other machines, or the Python
    workers of a Connect server, import them from this zip rather than needing
    sparkwire installed there.
    """
    root = Path(__file__).resolve().parent.parent
    archive = folder / "sparkwire_code.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in _PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                zf.write(path, path.relative_to(root).as_posix())
    if connect:
        spark.addArtifacts(str(archive), pyfile=True)
    else:
        spark.sparkContext.addPyFile(str(archive))
    log.info("code shipped to executors", extra={"event": "code_shipped", "bytes": archive.stat().st_size})


HEALTH_PING_EVERY = 2.0  # seconds between checks that the JVM is still there
HEALTH_PROBE_EVERY = 15.0  # seconds between trivial jobs that tell /health Spark still answers
HEALTH_PROBE_TIMEOUT = 30.0


def _jvm_alive(spark) -> bool:
    """Whether the driver JVM still answers (a py4j round trip, no Spark job)."""
    try:
        return not spark.sparkContext._jsc.sc().isStopped()
    except Exception:  # noqa: BLE001 - a refused connection is exactly what we look for
        return False


def _forget_session() -> None:
    """Drop PySpark's process-wide handles on a dead JVM, so that the next builder starts one."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


def session_lost(spark, exc: BaseException) -> bool:
    """Whether a Connect call failed because the server no longer has our session: it
    restarted (the client then closes itself) or expired the session."""
    client = getattr(spark, "client", None)
    if client is not None and client.is_closed:
        return True
    condition = getattr(exc, "getCondition", None)
    try:
        name = condition() if condition is not None else ""
    except Exception:  # noqa: BLE001 - an error without the details is not this one
        name = ""
    return (name or "").startswith("INVALID_HANDLE.SESSION")


class SparkEngine:
    """Owns the SparkSession and the threads that talk to it."""

    def __init__(self, master: str = "local[*]", threads: int = 32,
                 conf: dict[str, str] | None = None, data_dir: str | os.PathLike | None = None) -> None:
        self.master = master
        self.conf = dict(conf or {})  # --spark-conf: over our defaults
        self.data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self._scratch: Path | None = None
        self._reconnect_lock = threading.Lock()
        self._stopped = threading.Event()
        self._spark = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="spark")
        self._groups = itertools.count(1)
        self.started_at = time.monotonic()
        self.ready_after: float | None = None
        self._cancelled: set[str] = set()
        self._running: set[str] = set()  # groups with a call on a worker thread now
        self.healthy = True  # the last probe ran a trivial job (HEALTH_PROBE_EVERY)
        self.restarts = 0  # SparkSessions started again after their JVM went away

    # -- lifecycle -------------------------------------------------------
    def start_in_background(self) -> None:
        log.info("spark starting", extra={"event": "spark_starting", "master": self.master})
        threading.Thread(target=self._start, name="spark-start", daemon=True).start()
        threading.Thread(target=self._report_start, name="spark-start-progress", daemon=True).start()

    def _report_start(self, every: float = 10.0) -> None:
        """A cold start takes ~8 s here, much longer on a busy cluster: say it is still going."""
        while not self._ready.wait(every):
            log.info("spark still starting", extra={"event": "spark_starting", "master": self.master,
                                                    "seconds": round(time.monotonic() - self.started_at)})

    def _start(self) -> None:
        try:
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            spark = self._open_session()
            # One tiny job so the first user query does not pay for JIT warm-up.
            spark.range(1).toArrow()
            self._spark = spark
            self.ready_after = time.monotonic() - self.started_at
            log.info("spark ready", extra={"event": "spark_ready", "master": self.master,
                                           "seconds": round(self.ready_after, 2)})
            if self.connect:
                threading.Thread(target=self._keep_session_alive, name="spark-keepalive",
                                 daemon=True).start()
            threading.Thread(target=self._watch, name="spark-watchdog", daemon=True).start()
        except BaseException as exc:  # noqa: BLE001 - reported to every waiting query
            self._failed = exc
            log.error("spark failed to start: %s", exc)
        finally:
            self._ready.set()

    def _open_session(self):
        from pyspark.sql import SparkSession

        if self.connect:
            # create(), not getOrCreate(): after a lost session the cached client is closed
            # for good. The Connect server owns the static settings; the session ones are ours.
            spark = SparkSession.builder.remote(self.master).create()
            session_conf = {k: v for k, v in {**_SPARK_CONF, **HARDENING_CONF}.items()
                            if k.startswith("spark.sql.") and k != "spark.sql.catalogImplementation"}
            for key, value in {**session_conf, **self.conf}.items():
                spark.conf.set(key, value)
        else:
            builder = SparkSession.builder.appName("sparkwire").master(self.master)
            local = local_dirs_conf(self.data_dir) if self.data_dir is not None else {}
            if not self.master.startswith("local"):
                local.pop("spark.local.dir", None)  # executors' scratch space is theirs to set
            elif "spark.local.dir" in local:
                # Shuffle and block files of a Spark that was killed: nothing reads them again.
                shutil.rmtree(local["spark.local.dir"], ignore_errors=True)
            for key, value in {**_SPARK_CONF, **HARDENING_CONF, **local, **self.conf}.items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
            spark.sparkContext.setLogLevel("ERROR")
        if not self.master.startswith("local"):
            if self._scratch is None:
                # Kept until stop(): the driver serves the file to executors that join later.
                self._scratch = Path(tempfile.mkdtemp(prefix="sparkwire-pyfiles-"))
            ship_code(spark, self.connect, self._scratch)
        jsonb_udfs.register(spark)  # the jsonb operators the planner writes as UDF calls
        numeric_udfs.register(spark)  # numeric results with PostgreSQL's per-value scale
        float_udfs.register(spark)  # float8/float4 to text as PostgreSQL writes them
        float_math_udfs.register(spark)  # float8 functions computed by the C library, as PostgreSQL's
        string_udfs.register(spark)  # regexp_*, encode/decode, chr, ... with PostgreSQL's answers
        interval_udfs.register(spark)  # interval arithmetic over its text, as PostgreSQL's
        return spark

    def _reconnect(self, lost) -> object:
        """A new Connect session in place of `lost` (the Connect server restarted, or
        expired the session); each of the threads that noticed gets the same new one."""
        with self._reconnect_lock:
            if self._spark is lost:
                log.warning("spark connect session lost; opening a new one",
                            extra={"event": "spark_reconnect", "master": self.master})
                self._spark = self._open_session()
            return self._spark

    def _keep_session_alive(self, every: float = 60.0) -> None:
        """A Connect server closes a session after some idle time (an hour by default)
        and an idle sparkwire makes no Spark calls: touch the session now and then."""
        while not self._stopped.wait(every):
            try:
                self._call(lambda spark: spark.conf.get("spark.sql.session.timeZone"), (), None)
            except Exception as exc:  # noqa: BLE001 - the next query reports it to its client
                log.warning("spark connect keepalive failed: %s", exc,
                            extra={"event": "spark_keepalive_failed"})

    @property
    def ready(self) -> bool:
        return self._spark is not None

    def health(self) -> str | None:
        """What keeps Spark from answering, for /health; None when it answers."""
        if not self.ready:
            return "starting: Spark is not up yet"
        if not self.healthy:
            return "unavailable: Spark cannot run a job"
        return None

    # -- health -----------------------------------------------------------------
    def _watch(self, every: float = HEALTH_PING_EVERY) -> None:
        """Notice a JVM that went away (killed, out of memory, System.exit) within seconds
        and start a new SparkSession; and run a trivial job now and then, so that /health
        tells whether Spark can still answer."""
        last_probe = time.monotonic()
        while not self._stopped.wait(every):
            spark = self._spark
            if spark is None:
                continue
            if not self.connect and not _jvm_alive(spark):
                self.healthy = False
                self._restart(spark)
                last_probe = time.monotonic()
                continue
            if time.monotonic() - last_probe >= HEALTH_PROBE_EVERY:
                self.healthy = self._probe(spark)
                last_probe = time.monotonic()

    def _probe(self, spark, timeout: float = HEALTH_PROBE_TIMEOUT) -> bool:
        """Whether a trivial job finishes within `timeout` seconds."""
        done = threading.Event()
        outcome: list[bool] = []

        def run() -> None:
            try:
                outcome.append(spark.range(1).count() == 1)
            except Exception as exc:  # noqa: BLE001 - any failure means unhealthy
                log.warning("spark health probe failed: %s", exc, extra={"event": "spark_unhealthy"})
                outcome.append(False)
            finally:
                done.set()

        threading.Thread(target=run, name="spark-probe", daemon=True).start()
        if not done.wait(timeout):
            log.warning("spark health probe timed out", extra={"event": "spark_unhealthy",
                                                               "seconds": timeout})
            return False
        return bool(outcome and outcome[0])

    def _restart(self, dead) -> None:
        """A new SparkSession in place of one whose JVM is gone. Statements that arrive
        meanwhile wait for it, as at start-up; those that were running have failed."""
        with self._reconnect_lock:
            if self._spark is not dead:
                return
            log.error("spark is gone (its JVM exited); starting a new SparkSession",
                      extra={"event": "spark_restart", "master": self.master})
            self._ready.clear()
            self._spark = None
            started = time.monotonic()
            try:
                _forget_session()
                spark = self._open_session()
                spark.range(1).toArrow()
            except BaseException as exc:  # noqa: BLE001 - reported to every waiting query
                self._failed = exc
                log.error("spark failed to restart: %s", exc, extra={"event": "spark_restart_failed"})
                self._ready.set()
                return
            self._spark = spark
            self.restarts += 1
            self.healthy = True
            self._ready.set()
            log.info("spark ready again", extra={"event": "spark_ready", "master": self.master,
                                                 "seconds": round(time.monotonic() - started, 2)})

    def session(self):
        """The SparkSession, waiting for start-up if it is still under way."""
        self._ready.wait()
        if self._spark is None:
            raise SqlError("XX000", f"Spark failed to start: {self._failed}")
        return self._spark

    def stop(self) -> None:
        self._stopped.set()
        try:
            if self._spark is not None:
                self._spark.stop()
        finally:
            # Also when the driver JVM is already gone (a signal to the whole process group).
            self._pool.shutdown(wait=False, cancel_futures=True)
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)

    # -- running work -------------------------------------------------------
    def new_group(self) -> str:
        return f"sparkwire-{next(self._groups)}"

    async def run(self, fn: Callable[..., T], *args, group: str | None = None) -> T:
        """Run `fn(spark, *args)` on a worker thread, under job group `group`."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._call, fn, args, group)

    def _call(self, fn: Callable[..., T], args: tuple, group: str | None) -> T:
        spark = self.session()
        if group is not None:
            if group in self._cancelled:  # cancelled before this call began
                self._cancelled.discard(group)
                raise SqlError(QUERY_CANCELED, "canceling statement due to user request")
            self._running.add(group)
        try:
            try:
                return self._call_in_group(spark, fn, args, group)
            except Exception as exc:
                if not (self.connect and session_lost(spark, exc)):
                    raise
                # Spark work is a pure function of the data directory: safe to run again.
                return self._call_in_group(self._reconnect(spark), fn, args, group)
        except SqlError:
            raise
        except Exception as exc:
            if group is not None and group in self._cancelled:
                raise SqlError(QUERY_CANCELED, "canceling statement due to user request") from exc
            raise translate_spark_error(exc) from exc
        finally:
            if group is not None:
                self._running.discard(group)
                self._cancelled.discard(group)

    def _call_in_group(self, spark, fn: Callable[..., T], args: tuple, group: str | None) -> T:
        if group is None:
            return fn(spark, *args)
        if self.connect:
            spark.addTag(group)
        else:
            spark.sparkContext.setJobGroup(group, group, interruptOnCancel=True)
        try:
            return fn(spark, *args)
        finally:
            if self.connect:
                spark.removeTag(group)
            else:
                spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)

    def cancel(self, group: str) -> None:
        """Stop the Spark jobs of one statement; safe to call from any thread."""
        self._cancelled.add(group)
        if self._spark is not None:
            self._interrupt(group)
            threading.Thread(target=self._keep_cancelling, args=(group,), daemon=True).start()

    def _interrupt(self, group: str) -> None:
        if self.connect:
            self._spark.interruptTag(group)
        else:
            self._spark.sparkContext.cancelJobGroup(group)

    @property
    def connect(self) -> bool:
        """True when Spark is reached through Spark Connect (no SparkContext here)."""
        return self.master.startswith("sc://")

    def _keep_cancelling(self, group: str, poll: float = 0.05, limit: float = 30.0) -> None:
        """cancelJobGroup stops only the jobs running at that instant: a call between two
        jobs would start the next one. Repeat it until the group's call has returned."""
        deadline = time.monotonic() + limit
        while group in self._cancelled and time.monotonic() < deadline:
            time.sleep(poll)
            if group in self._running and self._spark is not None:
                self._interrupt(group)
        self._cancelled.discard(group)

