"""Org files are notes: settings as front-matter fields, text as markdown."""

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selene_dag.notes.ingest import read_notes
from selene_dag.notes.org import org_date, org_note

ROAM_NOTE = """\
:PROPERTIES:
:ID:       6f1c2a3e-8d1b-4b8e-9a1f-2b3c4d5e6f70
:CREATED:  [2024-03-05 Tue 10:15]
:END:
#+title: DuckDB tips
#+filetags: :databases:duckdb:

# a private comment, not a heading
DuckDB reads Parquet directly, see [[https://duckdb.org/docs][the docs]] and [[id:1234][Parquet notes]].

* Reading CSV files                                              :csv:
:LOGBOOK:
CLOCK: [2024-03-05 Tue 10:20]--[2024-03-05 Tue 10:30] =>  0:10
:END:
Use read_csv_auto like this:
#+begin_src sql :results table
SELECT * FROM read_csv_auto('data.csv');
#+end_src

** TODO Try the httpfs extension                                  :remote:csv:
#+BEGIN_QUOTE
Remote files are read with range requests.
#+END_QUOTE
- [X] install it
"""


def test_an_org_roam_note_gives_its_settings_and_markdown_text(tmp_path):
    (tmp_path / "20240305101500-duckdb_tips.org").write_text(ROAM_NOTE, encoding="utf-8")
    result = read_notes(tmp_path)
    assert result.errors == []
    (note,) = result.notes
    assert note.id == "20240305101500-duckdb_tips.org"  # its path, not org-roam's node id
    assert note.title == "DuckDB tips"
    assert note.created_at == datetime(2024, 3, 5, 10, 15, tzinfo=UTC)
    assert note.tags == ("databases", "duckdb", "csv", "remote")
    assert note.content == (
        "DuckDB reads Parquet directly, see [the docs](https://duckdb.org/docs) and "
        "Parquet notes.\n"
        "\n"
        "# Reading CSV files\n"
        "Use read_csv_auto like this:\n"
        "```sql\n"
        "SELECT * FROM read_csv_auto('data.csv');\n"
        "```\n"
        "\n"
        "## TODO Try the httpfs extension\n"
        "> Remote files are read with range requests.\n"
        "\n"
        "- [X] install it\n"
    )


def test_org_settings_fall_back_as_markdown_ones_do(tmp_path):
    # No #+title: the first heading; no heading: the file name. A date setting wins over
    # the file's name; #+category is the theme; a drawer with no :END: is text.
    (tmp_path / "inbox.org").write_text("* Call the bank :errand:\nabout the card\n")
    (tmp_path / "plain.org").write_text("just a line\n:NOTE:\nkept\n")
    (tmp_path / "20240101120000-dated.org").write_text(
        "#+date: <2023-06-07 Wed>\n#+category: work\n#+roam_tags: alpha beta\nbody\n"
    )
    (tmp_path / "settings-only.org").write_text("#+title: Nothing else\n#+startup: overview\n")
    (tmp_path / "drawer.org").write_text(
        ":PROPERTIES:\n:TEST_RUN: t\n:CATEGORY: home\n:ID: 1\n:END:\ntext\n"
    )
    result = read_notes(tmp_path)
    notes = {n.id: n for n in result.notes}
    assert notes["inbox.org"].title == "Call the bank"
    assert notes["inbox.org"].tags == ("errand",)
    assert notes["plain.org"].title == "plain"
    assert notes["plain.org"].content == "just a line\n:NOTE:\nkept\n"
    dated = notes["20240101120000-dated.org"]
    assert (dated.created_at, dated.topic, dated.tags) == (
        datetime(2023, 6, 7, tzinfo=UTC),
        "work",
        ("alpha", "beta"),
    )
    assert "settings-only.org" not in notes
    # Of the top drawer's properties only those a front-matter would give are read.
    drawer = notes["drawer.org"]
    assert (drawer.id, drawer.topic, drawer.test_run, drawer.content) == (
        "drawer.org",
        "home",
        False,
        "text\n",
    )
    assert [(e.source.rsplit("/", 1)[-1], e.error) for e in result.errors] == [
        ("settings-only.org", "empty note: no text after the Org settings")
    ]


def test_an_unreadable_org_date_costs_the_date_not_the_note(tmp_path):
    (tmp_path / "n.org").write_text("#+date: someday\ntext\n")
    result = read_notes(tmp_path)
    assert [n.created_at for n in result.notes] == [None]
    (error,) = result.errors
    assert error.kept and "Org settings date (unreadable date 'someday') ignored" in error.error


def test_org_timestamps_become_iso_dates():
    assert org_date("[2024-03-05 Tue 9:05]") == "2024-03-05T09:05"
    assert org_date("<2024-03-05 mar.>") == "2024-03-05"
    assert org_date("2024-03-05") == "2024-03-05"
    assert org_date("next week") == "next week"
    assert org_date("<2024-03-05 Tue>--<2024-03-07 Thu>") == "2024-03-05"


def test_blocks_the_file_never_closes_stay_text_and_code_is_fenced():
    meta, text = org_note("#+begin_example\nliteral * not a heading\n")
    assert (meta, text) == ({}, "```\nliteral * not a heading\n```\n")
    meta, text = org_note("#+begin_center\n[[file:a.org]]\n#+end_center\n")
    assert text == "a.org\n"
    meta, text = org_note("* See [[https://gnu.org][GNU]]\n[[https://gnu.org][GNU]]\n")
    assert text == "# See GNU\n[GNU](https://gnu.org)\n"


def test_zettelkasten_ids_in_names_date_markdown_notes_too(tmp_path):
    (tmp_path / "202403051015 an idea.md").write_text("idea")
    (tmp_path / "2024030510150 thirteen digits.md").write_text("no date")
    got = {n.id: n.created_at for n in read_notes(tmp_path).notes}
    assert got == {
        "202403051015 an idea.md": datetime(2024, 3, 5, 10, 15, tzinfo=UTC),
        "2024030510150 thirteen digits.md": None,
    }


_ORG_LINE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            ":PROPERTIES:",
            ":END:",
            ":CREATED: [2024-01-02 Tue]",
            "#+title: T",
            "#+begin_src",
            "#+end_src",
            "#+BEGIN_QUOTE",
            "#+end_quote",
            "* H :a:",
            "** ",
            "# c",
            "[[x][y]]",
            "#+filetags: :a:b:",
            "#+date: [2024-99-99]",
        ]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_ORG_LINE, max_size=12))
def test_any_org_text_is_read_without_raising(tmp_path_factory, lines):
    text = "\n".join(lines)
    meta, body = org_note(text)
    assert isinstance(body, str) and isinstance(meta, dict)
    folder = tmp_path_factory.mktemp("org")
    (folder / "n.org").write_text(text, encoding="utf-8", errors="surrogatepass")
    result = read_notes(folder)
    # A note, or the reason there is none (an empty one is read whole: a kept problem).
    empty = [e for e in result.errors if e.error.startswith("empty note")]
    assert len(result.notes) + len([e for e in result.errors if not e.kept]) + len(empty) == 1
