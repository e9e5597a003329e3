"""A disk that takes no more writes is named with what to do; other errors are not."""

from __future__ import annotations

import errno
import sqlite3

import duckdb

from selene_dag.errors import write_failure


def test_a_full_disk_names_the_file_and_what_to_do() -> None:
    exc = OSError(errno.ENOSPC, "No space left on device", "/h/selene.duckdb")
    assert write_failure(exc) == (
        "cannot write /h/selene.duckdb: No space left on device; free some space (or lift "
        "the limit) and run the command again"
    )


def test_a_write_without_a_file_name_does_not_name_the_home() -> None:
    line = write_failure(OSError(errno.EFBIG, "File too large"))
    assert line is not None and line.startswith("cannot write a file: File too large;")


def test_a_read_only_disk_is_not_told_to_free_space() -> None:
    line = write_failure(OSError(errno.EROFS, "Read-only file system", "/h/x"))
    assert line is not None and "make it writable" in line and "space" not in line
    chained = RuntimeError("storage failed")
    chained.__cause__ = sqlite3.OperationalError("attempt to write a readonly database")
    line = write_failure(chained)
    assert line is not None and line.endswith("make it writable and run the command again")


def test_other_errors_are_not_taken_for_a_full_disk() -> None:
    assert write_failure(OSError(errno.ENOENT, "No such file", "/x")) is None
    assert write_failure(sqlite3.OperationalError("no such table: runs")) is None
    assert write_failure(ValueError('Could not write file "x": File too large')) is None
    message = 'IO Error: Could not write file "/h/selene.duckdb": No space left on device'
    line = write_failure(duckdb.IOException(message))
    assert line == (
        "cannot write /h/selene.duckdb: No space left on device; free some space (or lift "
        "the limit) and run the command again"
    )


def test_a_full_disk_under_a_user_error_or_in_a_group_is_found() -> None:
    # A folder that could not be made on a full disk was a UsageError (a 422 from the API),
    # and a failure inside an exception group was not looked at.
    from selene_dag.errors import UsageError

    full = OSError(errno.ENOSPC, "No space left on device", "/data/home/distilled")
    try:
        try:
            raise full
        except OSError as exc:
            raise UsageError("cannot make /data/home/distilled") from exc
    except UsageError as user_error:
        assert write_failure(user_error) == write_failure(full)
    assert write_failure(ExceptionGroup("runs", [ValueError("x"), full])) == write_failure(full)
    assert write_failure(full).startswith("cannot write /data/home/distilled: No space left")


def test_a_full_disk_inside_a_dagster_run_is_a_full_disk() -> None:
    # A step's OSError reaches the caller as the text of a failed run (RunFailedError): the
    # API answered 503 "unavailable" and the CLI printed the step's bare error.
    import dagster as dg

    from selene_dag.defs.runs import failure_message
    from selene_dag.service import RunFailedError

    @dg.asset
    def writes_a_file() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/data/home/distilled/x.jsonl")

    result = dg.materialize([writes_a_file], raise_on_error=False)
    message = failure_message(result)
    assert message == (
        "step writes_a_file: cannot write /data/home/distilled/x.jsonl: No space left on "
        "device; free some space (or lift the limit) and run the command again"
    )
    line = write_failure(RunFailedError(f"ingest failed: {message}"))
    assert line == message.removeprefix("step writes_a_file: ")
    assert write_failure(RunFailedError("ingest failed: step notes: cannot write this")) is None

    @dg.asset
    def reads_a_file() -> None:
        raise OSError(errno.ENOENT, "No such file or directory", "/data/x")

    missing = failure_message(dg.materialize([reads_a_file], raise_on_error=False))
    assert write_failure(RunFailedError(missing)) is None
