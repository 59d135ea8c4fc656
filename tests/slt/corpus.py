"""Where the files are, how records are named, and the two lists the fast subset checks
against: the known wrong answers (with why) and the floor of sparkwire's pass rate."""

from __future__ import annotations

import json
from pathlib import Path

SLT_DIR = Path(__file__).resolve().parent
SUITES = {
    "sqlite": SLT_DIR / "corpus" / "sqlite",  # third-party, verbatim (corpus/README.md)
    "pg_regress": SLT_DIR / "pg_regress",  # ours, derived from PostgreSQL's regression suite
    "own": SLT_DIR / "own",  # ours, one file per bug family of issue 20
}
KNOWN_WRONG = SLT_DIR / "known_wrong.txt"
FLOOR = SLT_DIR / "floor.json"


def key(path: Path) -> str:
    """A file's name in reports and lists: its path under tests/slt."""
    return path.resolve().relative_to(SLT_DIR).as_posix()


def discover(selection: list[str] | None = None) -> list[Path]:
    """The files of the named suites, or the files / folders / globs given (all suites if none)."""
    if not selection:
        selection = list(SUITES)
    files: list[Path] = []
    for item in selection:
        if item in SUITES:
            files.extend(sorted(SUITES[item].rglob("*.test")))
            continue
        path = Path(item)
        if not path.exists() and (SLT_DIR / item).exists():
            path = SLT_DIR / item
        if path.is_dir():
            files.extend(sorted(path.rglob("*.test")))
        elif path.exists():
            files.append(path)
        else:
            matches = sorted(SLT_DIR.glob(item))
            if not matches:
                raise FileNotFoundError(item)
            files.extend(matches)
    seen: set[Path] = set()
    return [f for f in files if not (f.resolve() in seen or seen.add(f.resolve()))]


def is_third_party(path: Path) -> bool:
    """The big verbatim files, which the fast subset samples; our own files always run whole."""
    return SUITES["sqlite"] in path.resolve().parents


def load_known(path: Path = KNOWN_WRONG) -> dict[str, str]:
    """`file:line  reason` per line (`#` comments): records where sparkwire answers wrongly today."""
    known = {}
    if not path.exists():
        return known
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition(" ")
        known[name] = reason.strip()
    return known


def load_floor(path: Path = FLOOR) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"files": {}}


def save_floor(floor: dict, path: Path = FLOOR) -> None:
    path.write_text(json.dumps(floor, indent=1, sort_keys=True) + "\n")


def floor_of(results: list, sample_every: int) -> dict:
    """The floor file's content for these results (runner.FileResult): per file, how many records
    PostgreSQL passed and how many of those sparkwire passed, at this sampling."""
    return {"sample_every": sample_every,
            "files": {r.name: {"postgres": r.pg_passed, "sparkwire": r.both_passed} for r in results}}
