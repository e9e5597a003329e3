"""Shared text helpers."""

from selene_dag.text import close_open_fence


def test_an_open_fence_is_closed_and_a_closed_one_left_alone() -> None:
    # A note ending inside a code block turned every later item of a pack into code.
    assert close_open_fence("run:\n```bash\nmake\n") == "run:\n```bash\nmake\n```"
    assert close_open_fence("~~~\ncode") == "~~~\ncode\n~~~"
    assert close_open_fence("```\na\n```\n\n```py\nb") == "```\na\n```\n\n```py\nb\n```"
    done = "```\na\n```"
    assert close_open_fence(done) is done
    inner = "~~~\n```\n~~~"  # a ``` line inside a ~~~ block neither opens nor closes
    assert close_open_fence(inner) is inner


def test_natural_key_orders_numbers_by_value() -> None:
    from selene_dag.text import natural_key

    ids = ["list.json:10", "list.json:2", "list.json:1", "a9b", "a10b", "a01b", "a1b", "b"]
    assert sorted(ids, key=natural_key) == [
        "a01b",
        "a1b",
        "a9b",
        "a10b",
        "b",
        "list.json:1",
        "list.json:2",
        "list.json:10",
    ]
