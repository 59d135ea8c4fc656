"""Figures from file results: the per-file table, totals, and the biggest failure kinds."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from tests.slt.executor import ERROR, PASS, WRONG
from tests.slt.runner import FileResult


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "–"


def table(results: Sequence[FileResult]) -> str:
    rows = [("| file | records | PostgreSQL passes | sparkwire passes | sparkwire on PostgreSQL's | rate "
             "| wrong answers | errors | hangs | seconds |"),
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    total = [0] * 8
    for r in results:
        figures = [len(r.records), r.pg_passed, r.sw_passed, r.both_passed, r.wrong, r.errors, r.hangs,
                   round(r.seconds)]
        total = [a + b for a, b in zip(total, figures, strict=True)]
        rows.append(_row(r.name, figures))
    rows.append(_row("**total**", total))
    return "\n".join(rows)


def _row(name: str, f: list[int]) -> str:
    records, pg, sw, both, wrong, errors, hangs, seconds = f
    return (f"| {name} | {records} | {pg} | {sw} | {both} | {_pct(both, pg)} | {wrong} | {errors} | {hangs} "
            f"| {seconds} |")


def totals(results: Sequence[FileResult]) -> dict[str, int]:
    return {"records": sum(len(r.records) for r in results), "pg_passed": sum(r.pg_passed for r in results),
            "both_passed": sum(r.both_passed for r in results), "wrong": sum(r.wrong for r in results),
            "errors": sum(r.errors for r in results), "hangs": sum(r.hangs for r in results)}


_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`")
_NUMBER = re.compile(r"\b\d+(\.\d+)?\b")


def error_kind(sqlstate: str | None, message: str) -> str:
    """An error message with its names and numbers blanked, so like errors count together."""
    text = _NUMBER.sub("N", _QUOTED.sub("…", message))
    return f"{sqlstate or '?'} {text[:110]}"


def wrong_kind(detail: str) -> str:
    if detail.startswith("succeeded"):
        return "accepted a statement PostgreSQL rejects"
    if "columns, expected" in detail:
        return "wrong number of columns"
    if "values hashing" in detail or "values, expected" in detail or "rows, expected" in detail:
        return "wrong number of values / different result set"
    if detail.startswith(("value ", "row ")):
        return "a different value"
    return detail[:60]


def failure_kinds(results: Sequence[FileResult], top: int = 10) -> str:
    """Markdown: the commonest errors and wrong-answer kinds on records PostgreSQL passes."""
    errors: Counter[str] = Counter()
    wrongs: Counter[str] = Counter()
    examples: dict[str, str] = {}
    hangs = []
    for r in results:
        for record, pg, sw in r.pairs():
            if pg.status != PASS or sw is None or sw.status == PASS:
                continue
            where = f"{r.name}:{record.line}"
            if sw.status == ERROR:
                kind = error_kind(sw.sqlstate, sw.detail)
                errors[kind] += 1
            elif sw.status == WRONG:
                kind = wrong_kind(sw.detail)
                wrongs[kind] += 1
            else:
                kind = "hang"
                hangs.append(where)
            examples.setdefault(kind, f"{where} `{_one_line(record.sql)}`")
    lines = ["### Top errors (sparkwire errs where PostgreSQL passes)", "", "| count | SQLSTATE and message | example |",
             "|---:|---|---|"]
    lines += [f"| {n} | {_cell(k)} | {_cell(examples[k])} |" for k, n in errors.most_common(top)]
    lines += ["", "### Wrong answers (sparkwire answers differently where PostgreSQL passes)", "",
              "| count | kind | first example |", "|---:|---|---|"]
    lines += [f"| {n} | {_cell(k)} | {_cell(examples[k])} |" for k, n in wrongs.most_common(top)]
    if hangs:
        lines += ["", f"### Hangs: {len(hangs)}", "", *[f"- {h}" for h in hangs[:20]]]
    return "\n".join(lines)


def wrong_list(results: Sequence[FileResult]) -> list[str]:
    """`file:line  detail — SQL` for every silent wrong answer or hang (known_wrong.txt's form)."""
    out = []
    for r in results:
        for name, record, sw in r.silent_wrong():
            out.append(f"{name}  {sw.status}: {sw.detail} — {_one_line(record.sql)[:100]}")
    return out


def _one_line(sql: str) -> str:
    return " ".join(sql.split())[:140]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
