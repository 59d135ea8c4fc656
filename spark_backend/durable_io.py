"""The storage layer's durable steps, each a point where a test can inject a fault.

Every step that changes what is on disk — creating, writing, fsyncing, truncating, renaming
or removing a file, making or fsyncing a directory — goes through a function here. Writes
are unbuffered (`os.write` on a file descriptor, looped until every byte is out), so when a
write fails nothing of it lingers in a buffer to go out with the next one.

Faults, for tests:

- in a process: `arm(injector)` with any object that has `before(step)` and `after(step)`;
  `before` may raise (an `OSError` to fail the step, `SimulatedCrash` to stop right there).
- in a server: the environment variable `SPARKWIRE_FAULTS`, read at import, a comma-separated
  list of `ACTION:KIND[@PATH]:N[:ERRNO]` — at the Nth step of KIND (write, fsync, fsync_dir,
  rename, truncate, create, mkdir, unlink, or `any`) whose path contains PATH:
  `crash` exits at once (`os._exit(137)`, as `kill -9` would leave things), before the step;
  `crash-after` exits just after it; `fail` makes it raise OSError(ERRNO, default EIO)
  without doing it. `SPARKWIRE_FAULTS_TRACE=FILE` appends one line per step to FILE.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from typing import Protocol

CRASH_EXIT = 137  # what a shell reports for a process killed by SIGKILL


@dataclass(frozen=True)
class Step:
    kind: str  # write | fsync | fsync_dir | rename | truncate | create | mkdir | unlink
    path: str
    size: int = 0  # bytes written, or the length truncated to
    target: str = ""  # a rename's destination


class Injector(Protocol):
    def before(self, step: Step) -> None: ...

    def after(self, step: Step) -> None: ...


class SimulatedCrash(BaseException):
    """Raised by a test's injector to stop a workload at a step, as a crash would: a
    BaseException, so that no `except Exception` on the way out tidies anything up."""


_injector: Injector | None = None


def arm(injector: Injector | None) -> None:
    """Route every durable step through `injector` (None: no faults)."""
    global _injector
    _injector = injector


def armed() -> Injector | None:
    return _injector


def _before(step: Step) -> None:
    if _injector is not None:
        _injector.before(step)


def _after(step: Step) -> None:
    if _injector is not None:
        _injector.after(step)


# -- the steps ---------------------------------------------------------------------

def create(path: str | os.PathLike, exclusive: bool = True) -> int:
    """A new file, open for writing (its directory entry is durable only after fsync_dir)."""
    step = Step("create", os.fspath(path))
    _before(step)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    _after(step)
    return fd


def open_append(path: str | os.PathLike) -> int:
    """The log, open for appending (created if missing; not a fault point of its own: the
    directory entry of a new log is made durable by the fsync_dir that follows)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


def write(fd: int, data: bytes, path: str | os.PathLike) -> None:
    """All of `data`, or an OSError (a short write is continued; ENOSPC is raised as is)."""
    step = Step("write", os.fspath(path), len(data))
    _before(step)
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:  # pragma: no cover - os.write raises rather than return 0 for regular files
            raise OSError(errno.EIO, "short write", os.fspath(path))
        view = view[n:]
    _after(step)


def fsync(fd: int, path: str | os.PathLike) -> None:
    step = Step("fsync", os.fspath(path))
    _before(step)
    os.fsync(fd)
    _after(step)


def fsync_path(path: str | os.PathLike) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        fsync(fd, path)
    finally:
        os.close(fd)


def fsync_dir(path: str | os.PathLike) -> None:
    step = Step("fsync_dir", os.fspath(path))
    _before(step)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    _after(step)


def truncate(fd: int, length: int, path: str | os.PathLike) -> None:
    step = Step("truncate", os.fspath(path), length)
    _before(step)
    os.ftruncate(fd, length)
    _after(step)


def rename(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    step = Step("rename", os.fspath(src), target=os.fspath(dst))
    _before(step)
    os.replace(src, dst)
    _after(step)


def mkdir(path: str | os.PathLike) -> bool:
    """Make a directory; False when it was there already."""
    step = Step("mkdir", os.fspath(path))
    _before(step)
    try:
        os.mkdir(path)
    except FileExistsError:
        return False
    _after(step)
    return True


def unlink(path: str | os.PathLike) -> None:
    step = Step("unlink", os.fspath(path))
    _before(step)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    _after(step)


# -- faults from the environment (for tests that start a server process) ----------------

@dataclass
class _Rule:
    action: str  # crash | crash-after | fail
    kind: str
    path: str
    nth: int
    err: int
    seen: int = 0

    def matches(self, step: Step) -> bool:
        return (self.kind in ("any", step.kind)) and self.path in step.path + "\0" + step.target


class EnvInjector:
    """The faults of `SPARKWIRE_FAULTS` (see the module's doc), and its trace."""

    def __init__(self, spec: str, trace: str | None = None) -> None:
        self.rules = [self._rule(part.strip()) for part in spec.split(",") if part.strip()]
        self.trace = trace

    @staticmethod
    def _rule(text: str) -> _Rule:
        parts = text.split(":")
        if len(parts) not in (3, 4) or parts[0] not in ("crash", "crash-after", "fail"):
            raise ValueError(f"SPARKWIRE_FAULTS: cannot read {text!r} (ACTION:KIND[@PATH]:N[:ERRNO])")
        kind, _, path = parts[1].partition("@")
        err = getattr(errno, parts[3]) if len(parts) == 4 else errno.EIO
        return _Rule(parts[0], kind, path, int(parts[2]), err)

    def before(self, step: Step) -> None:
        if self.trace:
            with open(self.trace, "a") as f:
                f.write(f"{step.kind} {step.path} {step.target}\n".rstrip() + "\n")
        for rule in self.rules:
            if rule.matches(step):
                rule.seen += 1
                if rule.seen == rule.nth:
                    if rule.action == "crash":
                        os._exit(CRASH_EXIT)
                    if rule.action == "fail":
                        raise OSError(rule.err, f"{os.strerror(rule.err)} (injected)", step.path)

    def after(self, step: Step) -> None:
        for rule in self.rules:
            if rule.action == "crash-after" and rule.matches(step) and rule.seen == rule.nth:
                os._exit(CRASH_EXIT)


if os.environ.get("SPARKWIRE_FAULTS") or os.environ.get("SPARKWIRE_FAULTS_TRACE"):
    arm(EnvInjector(os.environ.get("SPARKWIRE_FAULTS", ""), os.environ.get("SPARKWIRE_FAULTS_TRACE")))
