"""Files replaced whole: a reader (another command, a run's subprocess) never sees half
of one, and two writers at once never share a temporary file."""

from __future__ import annotations

import os
import threading
from pathlib import Path


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
