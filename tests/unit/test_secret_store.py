"""The secret store: values in one file only the server's user can read, written durably."""

from __future__ import annotations

import os
import stat

from server.secret_store import FILE_NAME, SecretStore


def test_values_are_kept_private_and_survive_a_reopen(tmp_path):
    store = SecretStore(tmp_path)
    store.load()
    store.put("u1", "one")
    store.put("u2", "two")
    path = tmp_path / FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = SecretStore(tmp_path)
    again.load()
    assert (again.get("u1"), again.get("u2"), again.get("u3")) == ("one", "two", None)


def test_forgotten_values_leave_the_file(tmp_path):
    store = SecretStore(tmp_path)
    store.put("u1", "keep")
    store.put("u2", "drop-me")
    store.keep_only({"u1"})
    assert b"drop-me" not in (tmp_path / FILE_NAME).read_bytes()
    assert store.get("u2") is None and store.get("u1") == "keep"


def test_a_store_others_could_read_is_made_private_at_load(tmp_path):
    store = SecretStore(tmp_path)
    store.put("u1", "x")
    os.chmod(tmp_path / FILE_NAME, 0o644)
    SecretStore(tmp_path).load()
    assert stat.S_IMODE((tmp_path / FILE_NAME).stat().st_mode) == 0o600


def test_a_leftover_temporary_file_does_not_leak_its_mode(tmp_path):
    tmp = tmp_path / (FILE_NAME + ".tmp")
    tmp.write_text("{}")
    os.chmod(tmp, 0o666)
    SecretStore(tmp_path).put("u1", "x")
    assert stat.S_IMODE((tmp_path / FILE_NAME).stat().st_mode) == 0o600
