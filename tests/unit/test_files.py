"""Files replaced whole: writers at once each finish, and a failed write leaves nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from selene_dag.files import write_whole


def test_writers_at_once_each_replace_the_file_whole(tmp_path: Path) -> None:
    # One shared temporary name let a writer rename away the other's file (FileNotFoundError).
    path = tmp_path / "last_verdict.json"
    texts = [f"{n}\n" * 2000 for n in range(8)]
    errors: list[BaseException] = []

    def write(text: str) -> None:
        try:
            for _ in range(50):
                write_whole(path, text)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert path.read_text(encoding="utf-8") in texts
    assert [p.name for p in tmp_path.iterdir()] == ["last_verdict.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    write_whole(path, "old")
    with pytest.raises(UnicodeEncodeError):
        write_whole(path, "\ud800")
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
