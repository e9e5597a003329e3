"""Files replaced whole: a reader (another command, a run's subprocess) never sees half
of one, and two writers at once never share a temporary file."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Literal


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file of this process and
    thread beside it, then rename it over ``path``. The temporary file is removed when
    writing fails; the error is raised."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def file_state(path: str | Path) -> Literal["present", "gone", "unreadable"]:
    """Whether a file is at ``path``: ``"gone"`` when nothing (or a folder) is there,
    ``"unreadable"`` when this user may not look (a folder on the way that it may not
    read: the file may well be there). ``Path.is_file`` raised on the latter."""
    try:
        return "present" if stat.S_ISREG(os.stat(path).st_mode) else "gone"
    except (FileNotFoundError, NotADirectoryError):
        return "gone"
    except OSError:
        return "unreadable"
