"""SELECT … FOR UPDATE | FOR NO KEY UPDATE | FOR SHARE | FOR KEY SHARE [OF t] [NOWAIT | SKIP LOCKED].

PostgreSQL locks the rows a locking SELECT returns until the transaction ends, so that no
other transaction changes them meanwhile: the read-then-write of an ORM's
`select_for_update`, or a job queue's `FOR UPDATE SKIP LOCKED LIMIT 1`. sparkwire's writes
are already serialized by one write lock, which a transaction block that writes after
reading holds until it ends (server.session). A locking SELECT in a block takes that lock
at once: until COMMIT or ROLLBACK no other session writes anything, a stronger lock than
PostgreSQL's rows, never a weaker one. While another block holds it, NOWAIT is PostgreSQL's
55P03 and SKIP LOCKED returns no rows (every row counts as locked); plain waits for it.
Outside a block the lock would end with the statement, so none is taken, as in PostgreSQL
where nothing can come between the statement's read and its end.
"""

from __future__ import annotations

import re
from typing import Protocol

from planner import pg_parse
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from server.coordinator import Coordinator
from server.transaction import Transaction

LOCK_NOT_AVAILABLE = "55P03"
# A cheap test before parsing: most queries lock nothing.
_MAYBE = re.compile(r"\bfor\s+(update|share|no\s+key|key\s+share)\b", re.IGNORECASE)
_STRENGTHS = {"LCS_FORUPDATE": "FOR UPDATE", "LCS_FORNOKEYUPDATE": "FOR NO KEY UPDATE",
              "LCS_FORSHARE": "FOR SHARE", "LCS_FORKEYSHARE": "FOR KEY SHARE"}


class LockingSession(Protocol):
    coord: Coordinator
    txn: Transaction | None


def clause(text: str) -> dict | None:
    """The query's own locking clause (its first), or None; 0A000 where PostgreSQL refuses one."""
    if not _MAYBE.search(text):
        return None
    tree = pg_parse.parse_one(text)
    select = tree.get("SelectStmt")
    if select is None or not select.get("lockingClause"):
        return None
    locking = select["lockingClause"][0]["LockingClause"]
    what = _STRENGTHS.get(locking.get("strength"), "FOR UPDATE")
    for field, name in (("distinctClause", "DISTINCT clause"), ("groupClause", "GROUP BY clause"),
                        ("havingClause", "HAVING clause")):
        if select.get(field):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} is not allowed with {name}")
    if select.get("op", "SETOP_NONE") != "SETOP_NONE":
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} is not allowed with UNION/INTERSECT/EXCEPT")
    return {**locking, "relation": _relation(locking, select)}


def _relation(locking: dict, select: dict) -> str | None:
    """The relation a lock error names: the first of `OF`, else of FROM."""
    for node in (*(locking.get("lockedRels") or ()), *(select.get("fromClause") or ())):
        if "RangeVar" in node:
            return node["RangeVar"]["relname"]
    return None


async def take(session: LockingSession, text: str) -> bool:
    """Take what a locking SELECT needs before it reads; True when SKIP LOCKED must return
    no rows."""
    locking = clause(text)
    txn = session.txn
    if locking is None or txn is None or not txn.explicit or txn.holds_lock:
        return False
    lock = session.coord.write_lock
    policy = locking.get("waitPolicy", "LockWaitBlock")
    if lock.locked() and policy == "LockWaitError":
        relation = locking["relation"]
        raise SqlError(LOCK_NOT_AVAILABLE, "could not obtain lock on row" + (
            f' in relation "{relation}"' if relation else ""))
    if lock.locked() and policy == "LockWaitSkip":
        return True
    await lock.acquire()
    txn.holds_lock = True
    return False
