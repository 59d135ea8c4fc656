"""`sparkwire serve`: the command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import sys
import time
from collections.abc import MutableMapping

from server import catalog_ops
from server.catalog import Catalog
from spark_backend.storage import StorageDamaged
from spark_backend.storage_check import check_data_dir, recover_to_last_good


def _at_least_zero(kind: type, what: str):
    """An argparse type: a `kind` of 0 or more."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = -1
        if value < 0:
            raise argparse.ArgumentTypeError(f"expected {what}, 0 or more, not {text!r}")
        return value
    return parse


_records = _at_least_zero(int, "a number of records")
_seconds = _at_least_zero(float, "a number of seconds")


def _bytes(text: str) -> int:
    """A size in bytes: 1048576, 64kB, 16MB, 1GB (units of 1024, as PostgreSQL's)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmg]?)b?\s*", text.lower())
    if m is None or int(m.group(1)) < 1:
        raise argparse.ArgumentTypeError(f"expected a size like 16MB or 1048576, not {text!r}")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2)]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sparkwire", description="Streaming SQL on Spark over pgwire.")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the server",
                           formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    serve.add_argument("--host", default="127.0.0.1", help="listen address")
    serve.add_argument("--port", type=int, default=6875, help="listen port")
    serve.add_argument("--data-dir", default="./data", help="where tables and the catalog are kept")
    serve.add_argument("--spark-master", default="local[*]",
                       help="Spark master URL: local[*], spark://host:7077 or sc://host:15002")
    serve.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                       help="a Spark setting over sparkwire's defaults (repeatable), e.g. "
                            "spark.executor.memory=2g; with sc:// only session settings (spark.sql.*)")
    serve.add_argument("--tls-cert", help="PEM certificate: enables TLS (SSLRequest answered 'S')")
    serve.add_argument("--tls-key", help="PEM private key of --tls-cert")
    serve.add_argument("--require-tls", action="store_true", help="refuse connections without TLS")
    serve.add_argument("--users", dest="users_file",
                       help="file of user:password lines; every listed user logs in with SCRAM-SHA-256")
    serve.add_argument("--metrics-port", type=int, default=6876,
                       help="port of the Prometheus /metrics HTTP endpoint (0 turns it off)")
    # The default lives with the runner (server.kafka.SPARK_READS), whose import is not
    # worth paying for --help; SUPPRESS keeps "(default: None)" out of the help.
    serve.add_argument("--kafka-spark-reads", type=_records, metavar="RECORDS", default=argparse.SUPPRESS,
                       help="a Kafka table's backlog of at least RECORDS records is read by Spark's tasks "
                            "rather than polled by the server; 0: never (default: 100000)")
    serve.add_argument("--subscribe-buffer-bytes", type=_bytes, default="16MB", metavar="SIZE",
                       help="output a SUBSCRIBE's client has not read that the server holds for it; "
                            "past it the subscription waits for its client")
    serve.add_argument("--subscribe-stall-timeout", type=_seconds, default=0.0, metavar="SECONDS",
                       help="disconnect (53400) a SUBSCRIBE client whose buffer stayed full this long "
                            "without it reading; 0: hold its subscription back for ever")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--log-format", default="text", choices=["text", "json"])
    serve.add_argument("--password-file", metavar="FILE",
                       help="require the password on this file's first line (SCRAM-SHA-256) for every "
                            "user; default: $SPARKWIRE_PASSWORD, or trust authentication when neither is set")
    # Refused with a message (below), not unknown: a password on the command line is
    # readable by every user of the machine through `ps` and /proc.
    serve.add_argument("--password", help=argparse.SUPPRESS)
    check = sub.add_parser("check", help="check a data directory's log, checkpoint and data files "
                                         "(the server should not be running on it)")
    check.add_argument("--data-dir", default="./data", help="the data directory to check")
    check.add_argument("--recover-to-last-good", action="store_true",
                       help="cut a damaged log back to its last good record, after saying what that loses "
                            "(the damaged log and the files it alone names are kept in a damaged-* folder)")
    return p


PASSWORD_ON_COMMAND_LINE = (
    "--password is refused: a password on the command line is visible to every user of this "
    "machine (ps, /proc). Put it in a file readable only by you and pass --password-file FILE, "
    "or set $SPARKWIRE_PASSWORD.")


def server_password(args: argparse.Namespace, environ: MutableMapping[str, str]) -> str | None:
    """The server-wide password: from --password-file, else $SPARKWIRE_PASSWORD (which is
    then removed from `environ`, so that Spark's JVM and Python workers never inherit it)."""
    if args.password is not None:
        raise SystemExit(PASSWORD_ON_COMMAND_LINE)
    from_env = environ.pop("SPARKWIRE_PASSWORD", None)
    if args.password_file is None:
        return from_env or None
    try:
        with open(args.password_file, encoding="utf-8") as f:
            password = f.readline().rstrip("\r\n")
    except OSError as exc:
        raise SystemExit(f"--password-file {args.password_file}: {exc.strerror}") from None
    if not password:
        raise SystemExit(f"--password-file {args.password_file}: the first line is empty")
    return password


def _relation_names(snapshot: dict | None, ops: list[dict]):
    """Names for collection ids, from the catalog in a checkpoint and the log (ids if unreadable)."""
    try:
        catalog = Catalog.from_json(snapshot)
        for op in ops:
            catalog.apply(catalog_ops.from_json(op))
    except Exception:  # noqa: BLE001 - a report with ids is still a report
        return lambda cid: cid
    return lambda cid: catalog.items[cid].name if cid in catalog.items else cid


def check(data_dir: str, recover: bool) -> int:
    """`sparkwire check`: print what is damaged and what a recovery would lose; 0 when clean."""
    if not os.path.isdir(data_dir):
        print(f"{data_dir}: no such directory", file=sys.stderr)
        return 2
    ok, lines = check_data_dir(data_dir, _relation_names)
    print("\n".join(lines))
    if ok or not recover:
        return 0 if ok else 1
    try:
        print("\n".join(recover_to_last_good(data_dir)))
    except StorageDamaged as exc:
        print(f"cannot recover: {exc}", file=sys.stderr)
        return 1
    ok, lines = check_data_dir(data_dir, _relation_names)
    print("after recovery:\n" + "\n".join(lines))
    return 0 if ok else 1


class _JsonFormatter(logging.Formatter):
    _SKIP = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
               "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
        out.update({k: v for k, v in record.__dict__.items() if k not in self._SKIP})
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class _TextFormatter(logging.Formatter):
    _SKIP = _JsonFormatter._SKIP

    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{k}={v}" for k, v in record.__dict__.items() if k not in self._SKIP)
        base = super().format(record)
        return f"{base} {extra}" if extra else base


def _setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter() if fmt == "json" else
                         _TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # PySpark logs every failed query with its JVM stack trace; the client
    # already gets the error, so keep the server log readable.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)


def _spark_conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--spark-conf {pair!r}: expected KEY=VALUE")
        conf[key.strip()] = value
    return conf


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "check":
        raise SystemExit(check(args.data_dir, args.recover_to_last_good))
    spark_conf = _spark_conf(args.spark_conf)
    password = server_password(args, os.environ)
    # Timestamps are UTC everywhere: Spark's session, the JVM it starts, and the
    # Python side that turns Spark rows into datetimes.
    os.environ["TZ"] = "UTC"
    time.tzset()
    _setup_logging(args.log_level, args.log_format)
    # Imported here, not at the top, for start-up time only (there is no cycle): the server
    # brings sqlglot, the function catalog and pyspark's modules (~0.7 s) that
    # `sparkwire check` and `--help` do not need.
    from server.app import Config, Server

    config = Config(args.host, args.port, args.data_dir, args.spark_master, password,
                    args.metrics_port, args.tls_cert, args.tls_key, args.require_tls, args.users_file,
                    spark_conf=spark_conf, subscribe_buffer_bytes=args.subscribe_buffer_bytes,
                    subscribe_stall_timeout=args.subscribe_stall_timeout,
                    **({"kafka_spark_reads": args.kafka_spark_reads} if "kafka_spark_reads" in args else {}))
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency; keep working without it
        runner = asyncio.run
    runner(Server(config).serve_forever())


if __name__ == "__main__":
    main()
