"""`sparkwire check`: a data directory's log, checkpoint and data files checked offline, and
a damaged log cut back to its last good record (`--recover-to-last-good`)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from spark_backend import durable_io
from spark_backend.storage import (
    CHECKPOINT,
    LOG,
    Collection,
    Scan,
    StorageDamaged,
    Store,
    file_damage,
    scan,
)


def _state_of(found: Scan, root: Path) -> Store:
    """The collections the checkpoint and the log's good records describe (nothing written)."""
    store = Store(root)
    if found.checkpoint is not None:
        store.collections = {c["id"]: Collection.from_json(c) for c in found.checkpoint["collections"]}
        store.last_ts = found.checkpoint["last_ts"]
    for record in found.records:
        store.apply_record(record)
    return store


def _summary(records: list[dict], label: Callable[[str], str]) -> str:
    if not records:
        return "no readable records"
    rows: dict[str, int] = {}
    ops = 0
    for r in records:
        ops += len(r.get("catalog", []))
        for cid, f in r.get("files", {}).items():
            rows[label(cid)] = rows.get(label(cid), 0) + f["rows"]
    seqs = [r["seq"] for r in records if "seq" in r]
    stamps = [r["ts"] for r in records if "ts" in r]
    writes = ", ".join(f'{n} updates to "{name}"' for name, n in sorted(rows.items())) or "no writes"
    return (f"{len(records)} readable records (records {min(seqs, default='?')} to {max(seqs, default='?')}, "
            f"timestamps {min(stamps, default='?')} to {max(stamps, default='?')}): {writes}, "
            f"{ops} catalog operations")


def check_data_dir(data_dir: str | os.PathLike,
                   label: Callable[[dict | None, list[dict]], Callable[[str], str]] | None = None
                   ) -> tuple[bool, list[str]]:
    """Check a data directory without changing it: checkpoint, log and every data file the
    state names. Returns (no damage, report lines). `label(catalog snapshot, catalog ops)` may
    give a function naming collections in the report."""
    root = Path(data_dir).resolve()
    found = scan(root)
    lines: list[str] = []
    damage = found.damage
    if damage is not None and damage.file.name == CHECKPOINT:
        return False, [f"DAMAGED: {damage.describe()}; restore the data directory from a backup"]
    name = label(found.checkpoint and found.checkpoint.get("catalog"),
                 [op for r in found.records for op in r.get("catalog", [])]) if label else (lambda cid: cid)
    ckpt = found.checkpoint
    lines.append(f"{CHECKPOINT}: ok, the state after record {ckpt.get('seq', '?')} (timestamp {ckpt['last_ts']})"
                 if ckpt else f"{CHECKPOINT}: none yet")
    seqs = [r["seq"] for r in found.records if "seq" in r]
    lines.append(f"{LOG}: {len(found.records)} records to replay"
                 + (f" (records {seqs[0]} to {seqs[-1]})" if seqs else "")
                 + (f", {found.skipped} already in the checkpoint" if found.skipped else "")
                 + (" (written before checksums)" if found.legacy else ""))
    if found.torn:
        lines.append(f"{LOG}: a torn last record of {found.torn} bytes at offset {found.good_bytes}, cut short by "
                     "a crash and never acknowledged: the next start drops it")
    if damage is not None:
        lines.append(f"DAMAGED: {damage.describe()}")
        lines.append(f"recovering to the last good record (--recover-to-last-good) keeps everything before offset "
                     f"{damage.offset} and loses the damaged record ({damage.length} bytes) and what follows it: "
                     f"{_summary(damage.records_after, name)}")
    state = _state_of(found, root)
    bad = 0
    checked = 0
    for cid, coll in sorted(state.collections.items()):
        for f in coll.files:
            checked += 1
            why = file_damage(root, f)
            if why is not None:
                bad += 1
                lines.append(f'DAMAGED: data file {f.path} of table "{name(cid)}": {why} ({f.rows} updates); '
                             "restore it from a backup")
    lines.append(f"data files: {checked} checked, " + (f"{bad} damaged" if bad else "all ok"))
    return damage is None and not bad, lines


def recover_to_last_good(data_dir: str | os.PathLike) -> list[str]:
    """Cut a damaged log back to its last good record. The damaged log and every data file
    the remaining state does not name go to a `damaged-<time>` folder, not away."""
    root = Path(data_dir).resolve()
    found = scan(root)
    damage = found.damage
    if damage is None:
        return ["nothing to recover: the log has no damage"]
    if damage.file.name == CHECKPOINT:
        raise StorageDamaged(damage)
    aside = root / time.strftime("damaged-%Y%m%dT%H%M%S")
    aside.mkdir()
    shutil.copy2(root / LOG, aside / LOG)
    durable_io.fsync_path(aside / LOG)
    live = {f.path for c in _state_of(found, root).collections.values() for f in c.files}
    moved = 0
    for path in sorted((root / "collections").glob("*/*.parquet")):
        rel = path.relative_to(root)
        if str(rel) not in live:
            (aside / rel.parent).mkdir(parents=True, exist_ok=True)
            durable_io.rename(path, aside / rel)
            moved += 1
    for d in [aside, *aside.rglob("*")]:
        if d.is_dir():
            durable_io.fsync_dir(d)
    durable_io.fsync_dir(root)
    fd = os.open(root / LOG, os.O_WRONLY)
    try:
        durable_io.truncate(fd, damage.offset, root / LOG)
        durable_io.fsync(fd, root / LOG)
    finally:
        os.close(fd)
    return [(f"{LOG} cut back to {damage.offset} bytes (its last good record); the damaged log and {moved} data "
            f"files no longer named are in {aside}")]
