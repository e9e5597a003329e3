"""Plain-text helpers of the extractive engine: markdown stripping and sentence splitting."""

from __future__ import annotations

import html
import re

_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_OPEN_FENCE = re.compile(r"^\s*(```|~~~).*\Z", re.MULTILINE | re.DOTALL)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.MULTILINE)
_AUTOLINK = re.compile(r"<https?://[^>]+>")
_URL = re.compile(r"\bhttps?://\S+|\bwww\.\S+")
_HTML = re.compile(r"</?[a-zA-Z][^>]*>")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s.*$", re.MULTILINE)
_TABLE = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$", re.MULTILINE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.MULTILINE)
_QUOTE = re.compile(r"^\s*>\s?", re.MULTILINE)
_INDENTED_CODE = re.compile(r"^(?: {4}|\t)(?!\s*(?:[-*+]|\d+[.)])\s).*$", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
_INLINE_CODE = re.compile(r"`([^`\n]*)`")
_SPACES = re.compile(r"[ \t]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9`])")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'+#.-]*[A-Za-z0-9+#]|[A-Za-z]")

CODE_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


def strip_markdown(text: str) -> str:
    """Prose of a markdown note: code blocks, headings, tables, URLs, link and HTML syntax removed.

    Link text and inline-code text are kept (they are usually words of the sentence).
    Paragraph breaks are kept as blank lines; list items and quotes become paragraphs.
    """
    text = text.replace("\r\n", "\n")
    text = _FENCE.sub("\n", text)
    text = _OPEN_FENCE.sub("\n", text)
    text = _INDENTED_CODE.sub("", text)
    text = _HEADING.sub("", text)
    text = _TABLE.sub("", text)
    text = _RULE.sub("", text)
    text = _REF_DEF.sub("", text)
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _AUTOLINK.sub("", text)
    text = _URL.sub("", text)
    text = _HTML.sub("", text)
    text = _BULLET.sub("\n", text)
    text = _QUOTE.sub("", text)
    text = _EMPHASIS.sub(r"\2", text)
    text = _INLINE_CODE.sub(r"\1", text)
    text = html.unescape(text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines:
        if line:
            current.append(line)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


def split_sentences(text: str) -> list[str]:
    """Sentences of plain text: split at paragraph breaks and at ``. ! ?`` before a capital."""
    sentences: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        for part in _SENTENCE_END.split(paragraph):
            part = part.strip()
            if part:
                sentences.append(part)
    return sentences


def words(text: str) -> list[str]:
    """Word tokens (letters, digits, and ``_ ' + # . -`` inside a word)."""
    return _WORD.findall(text)


def shorten(text: str, max_chars: int) -> str:
    """``text`` cut at a word boundary to at most ``max_chars`` characters, ending with '…'."""
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1].rsplit(" ", 1)[0].rstrip(" ,;:-")
    return cut + "…"


def ensure_period(sentence: str) -> str:
    """``sentence`` ending with terminal punctuation."""
    sentence = sentence.strip()
    if not sentence:
        return sentence
    if sentence[-1] in ".!?…":
        return sentence
    if sentence[-1] in ":;,":
        sentence = sentence[:-1]
    return sentence + "."
