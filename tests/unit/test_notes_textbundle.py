"""Bear's tags, written in a note's text."""

from __future__ import annotations

import pytest

from selene_dag.notes.textbundle import bear_tags


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        ("A test with a tag\n#Test-Tag\n", ("Test-Tag",)),
        ("#two words# and #single, #parent/child.", ("two words", "single", "parent/child")),
        ("#中文 #标签/子标签", ("中文", "标签/子标签")),
        ("```\n#not-a-tag\n```\n#yes", ("yes",)),
        # Not a heading, a number, C#, a link's part or inline code.
        ("# Heading\nC# and url#part and #1 and `#code`", ()),
        # Nor a link to an anchor, a tag inside a link, a wiki link, a ~~~ block, a
        # shebang, a price, a date or punctuation.
        ("[x](#heading-one) ![i](#x) [#tag](url) #[[wiki]]", ()),
        ("~~~\n#tilde\n~~~\n#!/bin/sh\n#5.00 #2023-10-01 #- #_ #**bold**", ()),
    ],
)
def test_bear_tags(text: str, tags: tuple[str, ...]) -> None:
    assert bear_tags(text) == tags
