"""The command line's tables: numbers right-aligned, grouped, with one count of decimals
per column; other values as they are."""

from rich.console import Console

from selene_dag.cli import _rows_table


def _lines(rows: list[dict]) -> list[str]:
    console = Console(width=100, record=True)
    console.print(_rows_table(rows, "t"))
    return [line for line in console.export_text().splitlines() if line.startswith("│")]


def test_numbers_line_up_booleans_read_as_words_and_text_stays() -> None:
    rows = [
        {"key": "a", "events": 1234, "cons": 5.9, "ok": True},
        {"key": "b", "events": 5, "cons": 6.28, "ok": False},
        {"key": "c", "events": None, "cons": 5.0, "ok": True},
    ]
    cells = [[cell for cell in line.split("│")[1:-1]] for line in _lines(rows)]
    assert [c[1].strip() for c in cells] == ["1,234", "5", ""]
    assert cells[1][1].endswith(" 5 ") and cells[1][1].startswith("   ")  # right-aligned
    assert [c[2].strip() for c in cells] == ["5.90", "6.28", "5.00"]
    assert cells[0][2].endswith("5.90 ")  # right-aligned
    assert [c[3].strip() for c in cells] == ["yes", "no", "yes"]  # not Python's True
    assert cells[0][0].startswith(" a ")  # text stays left-aligned


def test_a_session_key_is_never_cut_in_a_narrow_terminal() -> None:
    # At 80 columns the key read `gemini-c8f…`: copied into `distill run`, it named nothing.
    row = {
        "session_key": "gemini-c8f0a1b2c3d4",
        "platform": "gemini",
        "path": "/home/someone/.gemini/tmp/" + "a" * 60 + "/chats/session-1.json",
        "size": 123_456,
        "state": "done",
    }
    console = Console(width=60, record=True)
    console.print(_rows_table([row], "t"))
    text = console.export_text()
    assert "gemini-c8f0a1b2c3d4" in text  # whole, on one line
    # The path wrapped, not cut: every character of it is there, line after line.
    column = [line.split("│")[3].strip() for line in text.splitlines() if line.startswith("│")]
    assert "".join(column) == row["path"]


def test_a_report_names_a_windows_project_by_its_folder() -> None:
    # A session run on Windows showed its whole C:\... path as its project.
    from selene_dag.cli import _project_name

    assert _project_name("C:\\Users\\x\\backproj") == "backproj"
    assert _project_name("C:\\Users\\x\\backproj\\") == "backproj"
    assert _project_name("C:/Users/x/fwdproj") == "fwdproj"
    assert _project_name("/home/x/proj/") == "proj"
    assert _project_name(None) == "-"
