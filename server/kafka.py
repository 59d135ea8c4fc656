"""Kafka sources: a consumer per table, decoding and upsert per micro-batch, exactly once.

Each table created FROM a Kafka source reads the topic from the beginning with
its own offsets. Every batch becomes one write at one timestamp together with
the table's next offsets, so after a crash the table holds each record's
effect once. With ENVELOPE UPSERT the server keeps each key's current row (and
error) so that a batch's winners can be compared with what is persisted, as
the upsert-order-by design describes.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import threading

import pyarrow as pa

from planner import kafka_syntax as ks
from planner import source_syntax as srcs
from planner.errors import INVALID_PARAMETER_VALUE, SqlError
from planner.types import BY_NAME, SqlType
from server import writes
from server.catalog import Column, Item
from spark_backend import kafka_source as kafka

log = logging.getLogger("sparkwire.kafka")

_TYPES = {"text": "text", "bytes": "bytea", "json": "jsonb", "csv": "text"}
_META_TYPES = {"partition": "integer", "offset": "bigint", "timestamp": "timestamp without time zone",
               "headers": "jsonb"}


def _epoch_ms(v: datetime.datetime) -> int:
    """Exact milliseconds since the epoch (float timestamp() * 1000 is off by one for some values)."""
    if v.tzinfo is not None:
        v = v.astimezone(datetime.UTC).replace(tzinfo=None)
    return (v - datetime.datetime(1970, 1, 1)) // datetime.timedelta(milliseconds=1)  # naive = UTC


def _t(name: str) -> SqlType:
    return SqlType(BY_NAME[name])


def table_layout(spec: ks.KafkaSpec) -> tuple[list[Column], kafka.DecodePlan]:
    """A Kafka table's columns (key, value, [error], metadata) and its decoding plan."""
    key_cols: list[str] = []
    key_fmt = (spec.key_format.kind, spec.key_format.columns) if spec.key_format else None
    key_include = spec.include("key")
    if spec.envelope == "upsert" or key_include is not None:
        if key_fmt is None:
            raise SqlError(INVALID_PARAMETER_VALUE, "INCLUDE KEY needs a key format: KEY FORMAT ... VALUE FORMAT ...")
        if key_fmt[0] == "csv":
            raise SqlError("0A000", "KEY FORMAT CSV is not supported")
        key_cols = [key_include.name if key_include else "key"]
    vf = spec.value_format
    value_cols = {"text": ["text"], "bytes": ["data"], "json": ["data"]}.get(
        vf.kind, [f"column{i + 1}" for i in range(vf.columns)])
    columns = [Column(c, _t(_TYPES[key_fmt[0]])) for c in key_cols]
    columns += [Column(c, _t(_TYPES[vf.kind])) for c in value_cols]
    if spec.inline_errors:
        columns.append(Column("error", _t("text")))
    for inc in spec.includes:
        if inc.what != "key":
            columns.append(Column(inc.name, _t(_META_TYPES[inc.what])))
    names = [c.name for c in columns]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise SqlError("42701", f'column "{dup}" specified more than once: rename it with INCLUDE ... AS')
    plan = kafka.DecodePlan(key_fmt, (vf.kind, vf.columns), tuple(key_cols), tuple(value_cols),
                            spec.inline_errors, key_required=spec.envelope == "upsert")
    return columns, plan


def _spec_from_json(d: dict) -> ks.KafkaSpec:
    return ks.parse_kafka_clauses(d["clauses"])


class KafkaTableRunner:
    """Consumes one topic into one table until stopped."""

    def __init__(self, manager, table: Item) -> None:
        self.manager = manager
        self.coord = manager.coord
        self.table_id = table.id
        self.status = "starting"
        self.error: str | None = None
        self._stop = threading.Event()
        self._task: asyncio.Task | None = None
        self.state: dict[tuple, tuple[tuple, list]] | None = None  # key → (order, row)
        self.key_errors: dict[str, dict] = dict(table.details["source"].get("errors", {}))

    @property
    def table(self) -> Item:
        return self.coord.catalog.items[self.table_id]

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            consumer = None
            try:
                info = self.table.details["source"]
                source = self.coord.catalog.items[info["source_id"]]
                config = self.manager.kafka_config(self.coord.catalog.items[source.details["connection_id"]])
                offsets = {int(p): o for p, o in info.get("offsets", {}).items()}
                consumer = await asyncio.to_thread(kafka.Consumer, config, source.details["topic"], offsets)
                await asyncio.to_thread(consumer.refresh_partitions)
                spec = _spec_from_json(info)
                _, plan = table_layout(spec)
                if spec.envelope == "upsert" and self.state is None:
                    await self._load_state(spec)
                self.status, self.error = "running", None
                backoff = 0.5
                idle_polls = 0
                while not self._stop.is_set():
                    raw = await asyncio.to_thread(consumer.poll)
                    if consumer.errors:
                        self.status, self.error = "stalled", consumer.errors[-1]
                        consumer.errors.clear()
                    elif raw.num_rows:
                        self.status, self.error = "running", None
                    if raw.num_rows == 0:
                        idle_polls += 1
                        if idle_polls % 25 == 0:
                            await asyncio.to_thread(consumer.refresh_partitions)
                            if self.status == "stalled" and not consumer.errors:
                                # The broker answers again: an idle topic must not stay "stalled".
                                self.status, self.error = "running", None
                        continue
                    await self._ingest(spec, plan, raw)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a broker problem stalls only this table
                self.status, self.error = "stalled", getattr(exc, "message", str(exc))
                log.warning("kafka table stalled", extra={"event": "kafka_stalled", "table": self.table_id,
                                                          "error": self.error})
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10)
            finally:
                if consumer is not None:
                    await asyncio.to_thread(consumer.close)

    async def _load_state(self, spec: ks.KafkaSpec) -> None:
        """Each key's persisted row, to compare incoming winners with (after a restart too)."""
        table = self.table
        result = await self.coord.query(f"SELECT * FROM __sw_state_{self.table_id}",
                                        {table.id: (f"__sw_state_{self.table_id}", table)},
                                        self.coord.read_ts())
        rows = list(zip(*[c.to_pylist() for c in result.table.columns])) if result.table.num_columns else []
        nkeys = 1
        self.state = {}
        for row in rows:
            self.state[tuple(row[:nkeys])] = (self._order_of(spec, list(row), None), list(row))

    def _order_of(self, spec: ks.KafkaSpec, row: list, record: dict | None) -> tuple:
        out = []
        names = self.table.column_names
        for kind in ks.order_kinds(spec):
            if record is not None:
                out.append(record["__ts"] if kind == "timestamp" else record["__offset"])
                continue
            inc = spec.include(kind)
            if inc is None:
                out.append(-1)  # not stored: any later record of the key is newer
            else:
                v = row[names.index(inc.name)]
                out.append(_epoch_ms(v) if isinstance(v, datetime.datetime) else v)
        return tuple(out)

    def _row(self, spec: ks.KafkaSpec, plan: kafka.DecodePlan, rec: dict) -> list:
        row = [rec[c] for c in plan.key_columns] + [rec[c] for c in plan.value_columns]
        if spec.inline_errors:
            row.append(rec["__err"])
        for inc in spec.includes:
            if inc.what == "partition":
                row.append(rec["__partition"])
            elif inc.what == "offset":
                row.append(rec["__offset"])
            elif inc.what == "timestamp":
                row.append(datetime.datetime.fromtimestamp(rec["__ts"] / 1000, datetime.UTC).replace(tzinfo=None))
            elif inc.what == "headers":
                row.append(rec["__headers"])
        return row

    async def _ingest(self, spec: ks.KafkaSpec, plan: kafka.DecodePlan, raw: pa.Table) -> None:
        upsert = spec.envelope == "upsert"
        order = ks.order_kinds(spec) if upsert else None
        decoded = await self.coord.engine.run(kafka.spark_batch, plan, raw, order)
        records = decoded.to_pylist()
        plus: list[list] = []
        minus: list[list] = []
        errors: dict[str, dict | None] = {}
        if not upsert:
            for rec in records:
                if rec["__err"] is not None:
                    errors[f"offset {rec['__partition']}/{rec['__offset']}"] = _error(rec)
                else:
                    plus.append(self._row(spec, plan, rec))
        else:
            for rec in records:
                key = tuple(rec[c] for c in plan.key_columns)
                label = _key_label(key, rec)
                prev = self.state.get(key)
                if rec["__err"] is not None and not spec.inline_errors:
                    errors[label] = _error(rec)  # a new error always overrides an old one
                    if prev is not None:
                        minus.append(prev[1])
                        del self.state[key]
                    continue
                had_error = label in self.key_errors or rec["__after_error"]
                if had_error:
                    errors[label] = None
                new_order = self._order_of(spec, [], rec)
                if prev is not None and not had_error and new_order <= prev[0]:
                    continue  # the persisted value is newer by the ORDER BY
                if prev is not None:
                    minus.append(prev[1])
                    del self.state[key]
                if not rec["__tomb"]:
                    row = self._row(spec, plan, rec)
                    plus.append(row)
                    self.state[key] = (new_order, row)
        offsets = {}
        for p, o in zip(raw.column("partition").to_pylist(), raw.column("offset").to_pylist()):
            offsets[str(p)] = max(offsets.get(str(p), 0), o + 1)
        table = self.table
        parts = []
        if plus:
            parts.append(writes.rows_to_updates(table, plus, +1))
        if minus:
            parts.append(writes.rows_to_updates(table, minus, -1))
        details = {"source": {"offsets": offsets}}
        if errors:
            merged = {k: v for k, v in {**self.key_errors, **errors}.items() if v is not None}
            details["source"]["errors"] = merged
        ops = [{"op": "details", "id": table.id, "details": details}]
        if errors:
            # Errors are replaced wholesale: merging could not forget a healed key.
            ops.insert(0, {"op": "details", "id": table.id, "details": {"source": {"errors": None}}})
        async with self.coord.write_lock:
            await self.coord.commit(ops, {table.id: writes.concat_updates(parts)} if parts else {})
        if errors:
            self.key_errors = details["source"]["errors"]
        self.manager.rows_ingested += len(plus) + len(minus)


def _error(rec: dict) -> dict:
    return {"partition": rec["__partition"], "offset": rec["__offset"], "message": rec["__err"]}


def _key_label(key: tuple, rec: dict) -> str:
    if key and key[0] is not None:
        v = key[0]
        return repr(v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
    raw = rec.get("__key_raw")
    return f"raw key {raw.hex()}" if raw is not None else "no key"


def check_errors(item: Item) -> None:
    """Reading a Kafka table whose keys are in error fails, naming one key and its offset."""
    errors = item.details.get("source", {}).get("errors") if item.kind == "table" else None
    if not errors:
        return
    key, err = next(iter(sorted(errors.items())))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    what = "a record" if key.startswith("offset ") else f"key {key}"  # ENVELOPE NONE errors have no key
    raise SqlError("XX000", f'table "{item.name}": {what} cannot be decoded at partition {err["partition"]} '
                            f'offset {err["offset"]}: {err["message"]}{more}',
                   hint="A later record or tombstone for the key replaces the error.")


# -- statements ----------------------------------------------------------------------

async def create_kafka_source(manager, session, stmt: srcs.CreateSource, connection: Item):
    from server.session import Outcome

    coord = session.coord
    options = dict(stmt.options)
    topic = options.get("topic")
    if not topic:
        raise SqlError(INVALID_PARAMETER_VALUE, "KAFKA sources need a TOPIC option")
    for opt in options:
        if opt not in ("topic",):
            raise SqlError(INVALID_PARAMETER_VALUE, f"unrecognized KAFKA source option {opt.upper()}")
    topics = await asyncio.to_thread(_topics, manager.kafka_config(connection))
    if topic not in topics:
        raise SqlError("42704", f'topic "{topic}" does not exist on the broker')
    clauses = stmt.rest.strip()
    source_name = f"{stmt.name}_progress" if clauses else stmt.name
    if coord.catalog.get(source_name) is not None:
        raise SqlError("42P07", f'relation "{source_name}" already exists')
    if clauses:
        # Check the table's clauses and name first: a failed statement must leave no source behind.
        table_layout(_checked_spec(clauses))
        if coord.catalog.get(stmt.name) is not None:
            raise SqlError("42P07", f'relation "{stmt.name}" already exists')
    source = Item(coord.catalog.allocate_id(), source_name, "source", (), coord.read_ts(),
                  sql=f'CREATE SOURCE "{source_name}" FROM KAFKA CONNECTION "{connection.name}" (TOPIC \'{topic}\')',
                  depends_on=(connection.id,),
                  details={"connector": "kafka", "connection_id": connection.id, "topic": topic})
    await session._ddl(lambda: coord.catalog.plan_create(source))
    if clauses:
        # The single-statement form: the source becomes <name>_progress, the data <name>.
        table_stmt = srcs.CreateTableFromSource(stmt.name, None, source_name, topic, (), False, clauses)
        await create_kafka_table(manager, session, table_stmt, coord.catalog.items[source.id])
    return Outcome("CREATE SOURCE")


async def create_kafka_table(manager, session, stmt: srcs.CreateTableFromSource, source: Item):
    from server.session import Outcome

    coord = session.coord
    reference = stmt.reference.strip('"')
    if reference != source.details["topic"]:
        raise SqlError(INVALID_PARAMETER_VALUE, f'source "{source.name}" reads topic '
                                                f'"{source.details["topic"]}", not "{reference}"')
    if stmt.columns is not None:
        raise SqlError("0A000", "a column list is not supported for tables from Kafka sources")
    spec = _checked_spec(stmt.rest)
    columns, _ = table_layout(spec)
    table = Item(coord.catalog.allocate_id(), stmt.name, "table", tuple(columns), coord.read_ts(),
                 sql=f'CREATE TABLE "{stmt.name}" FROM SOURCE "{source.name}" (REFERENCE "{reference}") '
                     f"{stmt.rest.strip()}",
                 depends_on=(source.id,),
                 details={"source": {"source_id": source.id, "reference": reference,
                                     "clauses": stmt.rest.strip(), "offsets": {}, "errors": {}}})
    await session._ddl(lambda: coord.catalog.plan_create(table))
    manager.start_kafka_table(coord.catalog.items[table.id])
    return Outcome("CREATE TABLE")


def _checked_spec(clauses: str) -> ks.KafkaSpec:
    try:
        spec = ks.parse_kafka_clauses(clauses)
        ks.check(spec)
    except SqlError as err:
        err.position = None  # relative to the clauses, not the statement: no caret rather than a wrong one
        raise
    return spec


def _topics(config: dict) -> list[str]:
    try:
        return kafka.check_broker(config)
    except Exception as exc:
        raise SqlError("08006", f"cannot reach Kafka broker {config.get('bootstrap.servers')}: {exc}") from exc


async def check_kafka(manager, connection: Item) -> None:
    await asyncio.to_thread(_topics, manager.kafka_config(connection))
