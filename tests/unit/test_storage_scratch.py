"""The data directory's scratch folder: hand-off files that only live during one piece of Spark work."""

from spark_backend.storage import Store


def test_scratch_is_emptied_at_every_start(tmp_path):
    store = Store(tmp_path / "data")
    store.open()
    assert store.scratch.is_dir() and not any(store.scratch.iterdir())
    # A batch's hand-off file left behind by a crash (kill -9 between write and unlink).
    (store.scratch / "kafka-left-behind.parquet").write_bytes(b"PAR1")
    store.close()
    again = Store(tmp_path / "data")
    again.open()
    assert again.scratch.is_dir() and not any(again.scratch.iterdir())
    again.close()
