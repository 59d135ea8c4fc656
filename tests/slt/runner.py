"""One file through both servers: parse, sample, run on PostgreSQL, run on sparkwire, and keep
both outcomes of every record side by side."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tests.slt.corpus import key
from tests.slt.executor import ERROR, HANG, PASS, WRONG, Outcome, Session, run_records
from tests.slt.records import Record, parse, sample


class Target(Protocol):
    name: str

    def session(self) -> Session: ...

    def finish(self, session: Session) -> None: ...


@dataclass
class FileResult:
    name: str
    records: list[Record]
    postgres: list[Outcome]
    sparkwire: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def pairs(self) -> list[tuple[Record, Outcome, Outcome | None]]:
        sw = self.sparkwire or [None] * len(self.records)
        return list(zip(self.records, self.postgres, sw, strict=True))

    def count(self, status: str, *, on_pg_pass: bool = True) -> int:
        return sum(1 for _, pg, sw in self.pairs()
                   if sw is not None and sw.status == status and (pg.status == PASS or not on_pg_pass))

    @property
    def pg_passed(self) -> int:
        return sum(1 for o in self.postgres if o.status == PASS)

    @property
    def sw_passed(self) -> int:
        return sum(1 for o in self.sparkwire if o.status == PASS)

    @property
    def both_passed(self) -> int:
        return self.count(PASS)

    @property
    def wrong(self) -> int:
        return self.count(WRONG)

    @property
    def errors(self) -> int:
        return self.count(ERROR)

    @property
    def hangs(self) -> int:
        return self.count(HANG)

    def silent_wrong(self) -> list[tuple[str, Record, Outcome]]:
        """Records PostgreSQL passes where sparkwire answers something else, or hangs."""
        return [(f"{self.name}:{r.line}", r, sw) for r, pg, sw in self.pairs()
                if pg.status == PASS and sw is not None and sw.status in (WRONG, HANG)]


def run_file(path: Path, postgres: Target, sparkwire: Target | None, every: int = 1,
             progress: Callable[[str, Outcome], None] | None = None) -> FileResult:
    started = time.monotonic()
    records = sample(parse(path.read_text()), every)
    result = FileResult(key(path), records, _run_on(postgres, records, progress))
    if sparkwire is not None:
        result.sparkwire = _run_on(sparkwire, records, progress)
    result.seconds = time.monotonic() - started
    return result


def _run_on(target: Target, records: list[Record],
            progress: Callable[[str, Outcome], None] | None) -> list[Outcome]:
    session = target.session()
    try:
        return run_records(session, records, (lambda o: progress(target.name, o)) if progress else None)
    finally:
        target.finish(session)
