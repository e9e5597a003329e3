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
