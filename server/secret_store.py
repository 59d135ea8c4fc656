"""The values of `CREATE SECRET`, kept apart from the catalog and the commit log.

The catalog and the log hold only a secret's name and id: both are plain files
that backups, support bundles and `sparkwire check` read. The values live in one
file, `secrets.json`, that only the server's user can read (mode 0600), written
atomically and durably before the catalog record that names the secret.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

log = logging.getLogger("sparkwire.secrets")

FILE_NAME = "secrets.json"


class SecretStore:
    def __init__(self, data_dir: str | os.PathLike) -> None:
        self.path = Path(data_dir).resolve() / FILE_NAME
        self._values: dict[str, str] = {}
        self._lock = threading.Lock()

    def load(self) -> None:
        """Read the values; a file others could read is made private again, loudly."""
        if not self.path.exists():
            return
        mode = self.path.stat().st_mode & 0o777
        if mode & 0o077:
            log.warning("secret store was readable by others; mode set to 0600",
                        extra={"event": "secret_store_mode", "path": str(self.path), "mode": oct(mode)})
            os.chmod(self.path, 0o600)
        self._values = json.loads(self.path.read_text(encoding="utf-8"))

    def get(self, secret_id: str) -> str | None:
        return self._values.get(secret_id)

    def put(self, secret_id: str, value: str) -> None:
        """Store a value durably (call before committing the catalog record naming it)."""
        with self._lock:
            self._write({**self._values, secret_id: value})

    def keep_only(self, live_ids: set[str]) -> None:
        """Forget the values of secrets the catalog no longer has (dropped, or created by
        a statement that failed after its value was stored)."""
        with self._lock:
            if set(self._values) - live_ids:
                self._write({k: v for k, v in self._values.items() if k in live_ids})

    def _write(self, values: dict[str, str]) -> None:
        tmp = self.path.with_name(FILE_NAME + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # O_CREAT's mode does not apply to a leftover file
            data = memoryview(json.dumps(values).encode("utf-8"))
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._values = values
