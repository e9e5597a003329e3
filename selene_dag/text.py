"""Text utilities used across selene-dag: markdown stripping, sentences, words, stop
words, a light stemmer and content hashes.

One home for each idea, so that the essence picker, the digest check, ask's passages and
the relevance levels split sentences the same way and every data version hashes the same
way. Pure functions, standard library only (imported by the context library too).
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import html
import re
import unicodedata
from collections.abc import Iterable
from os import PathLike, fspath
from typing import Any

# English stop words (the list scikit-learn ships as ENGLISH_STOP_WORDS, copied so that
# importing this module does not import scikit-learn).
ENGLISH_STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "across",
        "after",
        "afterwards",
        "again",
        "against",
        "all",
        "almost",
        "alone",
        "along",
        "already",
        "also",
        "although",
        "always",
        "am",
        "among",
        "amongst",
        "amoungst",
        "amount",
        "an",
        "and",
        "another",
        "any",
        "anyhow",
        "anyone",
        "anything",
        "anyway",
        "anywhere",
        "are",
        "around",
        "as",
        "at",
        "back",
        "be",
        "became",
        "because",
        "become",
        "becomes",
        "becoming",
        "been",
        "before",
        "beforehand",
        "behind",
        "being",
        "below",
        "beside",
        "besides",
        "between",
        "beyond",
        "bill",
        "both",
        "bottom",
        "but",
        "by",
        "call",
        "can",
        "cannot",
        "cant",
        "co",
        "con",
        "could",
        "couldnt",
        "cry",
        "de",
        "describe",
        "detail",
        "do",
        "done",
        "down",
        "due",
        "during",
        "each",
        "eg",
        "eight",
        "either",
        "eleven",
        "else",
        "elsewhere",
        "empty",
        "enough",
        "etc",
        "even",
        "ever",
        "every",
        "everyone",
        "everything",
        "everywhere",
        "except",
        "few",
        "fifteen",
        "fifty",
        "fill",
        "find",
        "fire",
        "first",
        "five",
        "for",
        "former",
        "formerly",
        "forty",
        "found",
        "four",
        "from",
        "front",
        "full",
        "further",
        "get",
        "give",
        "go",
        "had",
        "has",
        "hasnt",
        "have",
        "he",
        "hence",
        "her",
        "here",
        "hereafter",
        "hereby",
        "herein",
        "hereupon",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "hundred",
        "i",
        "ie",
        "if",
        "in",
        "inc",
        "indeed",
        "interest",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "keep",
        "last",
        "latter",
        "latterly",
        "least",
        "less",
        "ltd",
        "made",
        "many",
        "may",
        "me",
        "meanwhile",
        "might",
        "mill",
        "mine",
        "more",
        "moreover",
        "most",
        "mostly",
        "move",
        "much",
        "must",
        "my",
        "myself",
        "name",
        "namely",
        "neither",
        "never",
        "nevertheless",
        "next",
        "nine",
        "no",
        "nobody",
        "none",
        "noone",
        "nor",
        "not",
        "nothing",
        "now",
        "nowhere",
        "of",
        "off",
        "often",
        "on",
        "once",
        "one",
        "only",
        "onto",
        "or",
        "other",
        "others",
        "otherwise",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "part",
        "per",
        "perhaps",
        "please",
        "put",
        "rather",
        "re",
        "same",
        "see",
        "seem",
        "seemed",
        "seeming",
        "seems",
        "serious",
        "several",
        "she",
        "should",
        "show",
        "side",
        "since",
        "sincere",
        "six",
        "sixty",
        "so",
        "some",
        "somehow",
        "someone",
        "something",
        "sometime",
        "sometimes",
        "somewhere",
        "still",
        "such",
        "system",
        "take",
        "ten",
        "than",
        "that",
        "the",
        "their",
        "them",
        "themselves",
        "then",
        "thence",
        "there",
        "thereafter",
        "thereby",
        "therefore",
        "therein",
        "thereupon",
        "these",
        "they",
        "thick",
        "thin",
        "third",
        "this",
        "those",
        "though",
        "three",
        "through",
        "throughout",
        "thru",
        "thus",
        "to",
        "together",
        "too",
        "top",
        "toward",
        "towards",
        "twelve",
        "twenty",
        "two",
        "un",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "very",
        "via",
        "was",
        "we",
        "well",
        "were",
        "what",
        "whatever",
        "when",
        "whence",
        "whenever",
        "where",
        "whereafter",
        "whereas",
        "whereby",
        "wherein",
        "whereupon",
        "wherever",
        "whether",
        "which",
        "while",
        "whither",
        "who",
        "whoever",
        "whole",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "within",
        "without",
        "would",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)
# Words that carry no topic in notes ("today I learned how to get …").
_EXTRA_STOP_TEXT = """
    use used using uses like just really want wanted need needed way ways thing things got get
    gets getting make makes made lot lots bit good great new turns turned actually also able
    let lets want does did doing done going went know knew think thought said says say tried
    try trying worked works work working look looks looking looked run running ran runs
    following follows example examples today little pretty quite simply simple stuff ended end
    e.g i.e etc til i'm i've it's don't can't didn't doesn't isn't that's there's here's
    you'll you're we're i'd i'll ve ll re
"""
EXTRA_STOP_WORDS = frozenset(_EXTRA_STOP_TEXT.split())
# Stop words of key phrases and concepts (the extractive engine, heuristic assessments).
STOP_WORDS = ENGLISH_STOP_WORDS | EXTRA_STOP_WORDS
# A short list for question terms: only words no question is about; a longer list would
# drop words such as "show" or "system" that questions do turn on.
QUERY_STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "get",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "make",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "need",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "use",
        "used",
        "using",
        "very",
        "want",
        "was",
        "way",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_OPEN_FENCE = re.compile(r"^\s*(```|~~~).*\Z", re.MULTILINE | re.DOTALL)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
# Obsidian's and Logseq's [[target#heading|alias]] links and ![[embeds]].
_WIKI_EMBED = re.compile(r"!\[\[[^\]\n]*\]\]")
_WIKILINK = re.compile(r"\[\[([^\]|#\n]*)(?:#[^\]|\n]*)?(?:\|([^\]\n]*))?\]\]")


def _wikilink_text(match: re.Match[str]) -> str:
    """A wikilink's words: its alias, else its target's name (``notes/Idea.md`` → ``Idea``)."""
    if match.group(2):
        return match.group(2).strip()
    name = match.group(1).strip().rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


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
# A callout's type (Obsidian's "> [!warning] Title", GitHub's "> [!NOTE]"): markup, not
# words; its title stays. A Logseq macro ({{query …}}, {{embed …}}, {{renderer …}}) is a
# command to the editor: an essence of a dashboard page was its query.
_CALLOUT = re.compile(r"^\[![\w-]+\][+-]?[ \t]*", re.MULTILINE)
# Only Logseq's own macro names, written as it writes them ({{query …}}, no space after the
# braces): a template's {{ name }} in a note about Jinja is the note's text.
# An Org headline's planning line ("CLOSED: [2025-11-04 Tue 09:12] SCHEDULED: <…>"): the
# task's dates, kept in the note's text for a question about them, not its prose (an
# essence opened with one).
_ORG_PLANNING = re.compile(
    r"^[ \t]*(?:(?:CLOSED|SCHEDULED|DEADLINE):[ \t]*[\[<][^\]>\n]*[\]>][ \t]*)+$", re.MULTILINE
)
_MACRO = re.compile(
    r"\{\{(?:query|embed|renderer|video|youtube|youtube-timestamp|tweet|twitter|cloze|"
    r"namespace|pdf|zotero|function|cards|tutorial|bilibili|vimeo)\b[^{}\n]*\}\}"
)
_INDENTED_CODE = re.compile(r"^(?: {4}|\t)(?!\s*(?:[-*+]|\d+[.)])\s).*$", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
_INLINE_CODE = re.compile(r"`([^`\n]*)`")
_SPACES = re.compile(r"[ \t]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'+#.-]*[A-Za-z0-9+#]|[A-Za-z]")
# The same in any script: a letter, then letters, digits and _ ' + # . - inside.
_ANY_WORD = re.compile(r"[^\W\d_](?:[\w'+#.-]*(?:[^\W_]|[+#]))?")

CODE_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


# What may close a sentence or a quote around a bare URL: not part of it.
_URL_TRAIL = ".,;:!?)]'\"`*_>"
_URL_SCHEME = re.compile(r"^(?:https?://)?(?:www\.)?")


def _url_core(url: str) -> str:
    """``url`` without the punctuation after it: a ``)`` stays when the URL opened one
    (``…/Python_(programming_language)``)."""
    core = url
    while core and core[-1] in _URL_TRAIL:
        if core[-1] == ")" and core.count("(") >= core.count(")"):
            break
        core = core[:-1]
    return core


def _url_host(url: str) -> str:
    """A bare URL as the host it names, the punctuation after it kept; "" and that
    punctuation for a URL whose host cannot be told from its user and password."""
    core = _url_core(url)
    tail = url[len(core) :]
    rest = _URL_SCHEME.sub("", core)
    end = min((i for i in (rest.find(c) for c in "/?#") if i != -1), default=len(rest))
    at = rest.rfind("@", 0, end)  # the host follows the last @ of the authority
    first_at = rest.find("@")
    if at == -1 and first_at != -1 and ":" in rest[:first_at]:
        # user:password@host with / ? or # in the password, which hides where the host
        # starts: the URL goes whole, as it did before hosts were named.
        return tail
    return rest[at + 1 : end] + tail


def _autolink_host(match: re.Match[str]) -> str:
    found = _URL.search(match.group(0)[1:-1])
    return _url_host(found.group(0)) if found is not None else ""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (JSON cut inside an emoji's escape) as U+FFFD:
    what a question or a search can still use, where tokenizers fail on the surrogate."""
    return _LONE_SURROGATE.sub("\ufffd", text) if not text.isascii() else text


def reject_lone_surrogates(text: str, what: str = "text") -> None:
    """Raise ValueError when ``text`` holds a lone surrogate: not Unicode text (no model
    reads it; it comes from JSON cut inside an emoji's escape, or from a file name decoded
    with ``surrogateescape``). SentencePiece failed on one with a pybind11 message. The
    message names the string as ``what``."""
    found = None if text.isascii() else _LONE_SURROGATE.search(text)
    if found is not None:
        raise ValueError(
            f"{what} holds a lone surrogate (U+{ord(found.group()):04X}) at character "
            f"{found.start()}: it is not valid Unicode; replace it first "
            "(text.encode('utf-8', 'replace').decode())"
        )


def strip_markdown(text: str, hosts: bool = False) -> str:
    """Prose of a markdown note: code blocks, headings, tables, URLs, link and HTML syntax removed.

    Link text and inline-code text are kept (they are usually words of the sentence), a
    wikilink's alias or its target's name too; embeds (``![[…]]``) go. A bare URL goes,
    or with ``hosts`` becomes the host it names (``https://datasette.io/docs`` →
    ``datasette.io``): a sentence that says where reads whole ("I redirected
    global-power-plants.datasettes.com to datasette.io", not "I redirected to").
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
    text = _WIKI_EMBED.sub("", text)
    text = _WIKILINK.sub(_wikilink_text, text)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    if hosts:
        text = _AUTOLINK.sub(_autolink_host, text)
        text = _URL.sub(lambda m: _url_host(m.group(0)), text)
    else:
        text = _AUTOLINK.sub("", text)
        text = _URL.sub("", text)
    text = _HTML.sub("", text)
    text = _BULLET.sub("\n", text)
    text = _QUOTE.sub("", text)
    text = _CALLOUT.sub("", text)
    text = _MACRO.sub("", text)
    text = _ORG_PLANNING.sub("", text)
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


# A sentence ends at . ! or ? (closing quotes and brackets stay with it). ``capital``: the
# next sentence must open with a capital, digit or backtick (prose: "e.g. foo" stays
# whole); ``any``: any non-space opens it (plain splitting of already-clean text).
# A title before a name ("Dr. Okafor", "Mr. Lee") ends no sentence: the essence of a note
# began "Okafor agreed…" and its theme was "dr".
_TITLES = ("Dr", "Mr", "Mrs", "Ms", "Prof", "St", "Jr", "Sr", "Mt", "Rev", "Gen", "Capt", "Lt")
_NOT_A_TITLE = "".join(rf"(?<!\b{title}\.)" for title in _TITLES)
# Nor does an ellipsis inside brackets: code elides with it ("COPY (SELECT ...) TO 'x'"
# gave an essence opening "TO 'x' (FORMAT parquet)").
_NOT_AN_ELISION = r"(?!(?<=\.\.\.)[)\]])"
_SENTENCE_END = {
    "capital": re.compile(
        rf"(?<=[.!?]){_NOT_A_TITLE}{_NOT_AN_ELISION}([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9`])"
    ),
    "any": re.compile(r"(?<=[.!?])()\s+(?=\S)"),
}
_PARAGRAPH = re.compile(r"\n\s*\n")
_STOP_OF_OTHER_SCRIPTS = re.compile(r"(?<=[。！？।॥։።။།])([」』”’）)]*)\s*(?=\S)")


def split_sentences(text: str, *, boundary: str = "capital", flatten: bool = False) -> list[str]:
    """Sentences of plain text, in order, stripped, none empty.

    Paragraph breaks (blank lines) always end a sentence. ``boundary="capital"`` splits
    after ``. ! ?`` only before a capital, digit or backtick; ``"any"`` before any
    non-space. ``flatten`` first collapses all white space to single spaces (paragraphs
    then no longer split). Raises ValueError for an unknown boundary.
    """
    pattern = _SENTENCE_END.get(boundary)
    if pattern is None:
        raise ValueError(f"boundary must be 'capital' or 'any', got {boundary!r}")
    if flatten:
        text = " ".join(text.split())
    sentences: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        # The pattern captures the quotes and brackets that close a sentence: they stay
        # with it ('He said "stop."' lost its closing quote).
        for latin in _split_keeping(pattern, paragraph.strip()):
            # Scripts without capitals or spaces after their stops (Chinese, Japanese,
            # Devanagari): a stop of theirs ends a sentence wherever it is (a paragraph of
            # them was one sentence: an essence of a whole paragraph, a digest of one).
            if latin.isascii():
                sentences.append(latin)
            else:
                sentences.extend(_split_keeping(_STOP_OF_OTHER_SCRIPTS, latin))
    return sentences


def _split_keeping(pattern: re.Pattern[str], text: str) -> list[str]:
    """``text`` split by ``pattern`` (one capturing group: what closes the sentence before
    it, kept with it), the parts stripped, none empty."""
    parts = pattern.split(text)
    out: list[str] = []
    for i in range(0, len(parts), 2):
        part = (parts[i] + (parts[i + 1] if i + 1 < len(parts) else "")).strip()
        if part:
            out.append(part)
    return out


def words(text: str) -> list[str]:
    """Word tokens (letters, digits, and ``_ ' + # . -`` inside a word), in any script
    (``Steuererklärung``, ``налог``); each Chinese or Japanese character is a word, as
    search takes it (those scripts write no spaces)."""
    if text.isascii():
        return _WORD.findall(text)
    return _ANY_WORD.findall(space_cjk(text))


def shorten(text: str, max_chars: int) -> str:
    """``text`` cut at a word boundary to at most ``max_chars`` characters, ending with '…'."""
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1].rsplit(" ", 1)[0].rstrip(" ,;:-")
    return cut + "…"


# Chinese and Japanese characters (kana, CJK ideographs, halfwidth katakana) and their
# punctuation, as character-class ranges that Python's re and RE2 (DuckDB) both read. Those
# scripts write no spaces between words: search takes each character as a word.
CJK_CHARACTERS = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
CJK_PUNCTUATION = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
_CJK_CHARACTER = re.compile(f"[{CJK_CHARACTERS}]")
# One pass: a character is kept between spaces, a punctuation mark becomes spaces.
_CJK_SPLIT = re.compile(f"([{CJK_CHARACTERS}])|[{CJK_PUNCTUATION}]")


@functools.cache
def _mark_class(astral: bool) -> str:
    """A regex character class of every combining mark (Unicode categories Mn, Mc, Me) of
    the Basic Multilingual Plane, and with ``astral`` of the planes above it too: built
    once per process, on the first text that is not ASCII (about 20 ms). Kept apart
    because a class holding ranges above U+FFFF is matched about ten times slower."""
    codes = (*range(0x300, 0x20000), *range(0xE0100, 0xE01F0)) if astral else range(0x300, 0x10000)
    ranges: list[tuple[int, int]] = []
    for code in codes:
        if unicodedata.category(chr(code))[0] == "M":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]"


@functools.cache
def _marks(astral: bool) -> re.Pattern[str]:
    return re.compile(_mark_class(astral) + "+")


@functools.cache
def _word_with_marks(astral: bool) -> re.Pattern[str]:
    return re.compile(r"[^\W_](?:[^\W_]|" + _mark_class(astral) + ")*")


def _astral(text: str) -> bool:
    return max(text) > "\uffff"


def fold_marks(text: str) -> str:
    """``text`` decomposed (NFD) without its combining marks, as the search index's
    ``strip_accents`` folds it: ``café`` and ``cafe``, ``κωδικός`` and ``κωδικος``, a
    Hindi word and its letters without their vowel signs compare equal. ASCII text is
    returned as it is."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFD", text)
    return _marks(_astral(decomposed)).sub("", decomposed)


def fold_marks_at(text: str) -> tuple[str, list[int]]:
    """:func:`fold_marks` of ``text`` and, for each character of the result, the index in
    ``text`` of the character it comes from: a place found in the folded text is a place
    in ``text``. ASCII text is its own fold (and its indexes)."""
    if text.isascii():
        return text, list(range(len(text)))
    out: list[str] = []
    where: list[int] = []
    for i, char in enumerate(text):
        if char.isascii():
            out.append(char)
            where.append(i)
            continue
        for part in unicodedata.normalize("NFD", char):
            if unicodedata.category(part)[0] != "M":
                out.append(part)
                where.append(i)
    return "".join(out), where


def words_with_marks(text: str) -> Iterable[re.Match[str]]:
    """The words of ``text`` (letters and digits, not ``_``), each with the combining marks
    inside and after it: a vowel sign (Hindi), an accent typed apart (macOS's decomposed
    file names) or the dot of a lower-case ``İ`` does not split a word."""
    if text.isascii():
        return _ASCII_WORD.finditer(text)
    return _word_with_marks(_astral(text)).finditer(text)


_ASCII_WORD = re.compile(r"[^\W_]+")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Chinese or Japanese character."""
    return _CJK_CHARACTER.search(text) is not None


def space_cjk(text: str) -> str:
    """``text`` with each Chinese or Japanese character made a word of its own (spaces
    around it) and their punctuation a space, as the search index splits it; any other
    text unchanged."""
    if text.isascii():
        return text
    return _CJK_SPLIT.sub(r" \1 ", text)


def line_ends(text: str) -> str:
    """``text`` with every line end as ``\\n``: Windows' CRLF and an old Mac's lone CR
    too (an editor breaks the line at each; kept, a file of CR line ends was one line)."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` as an editor and ``grep -n`` number them: split at ``\\n``
    only (``str.splitlines`` also splits at a form feed, U+2028 and others, which moved
    every line after one), no last empty line for a text ending with a line break."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def decode_text(raw: bytes) -> tuple[str, str | None]:
    """A text file's bytes as text, line ends as ``\\n``, and what had to be guessed
    (None when nothing): UTF-8 (a byte order mark of UTF-8 or UTF-16 honoured), a bad byte
    replaced; a file with no UTF-8 character beyond ASCII and bytes that are not UTF-8,
    few among its letters, is Latin text in a one-byte encoding (an old editor's
    Windows-1252 or Latin-1) and read as that: replaced, "Café résumé" became
    "Caf\ufffd r\ufffdsum\ufffd"."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raw = raw.decode("utf-16", errors="replace").encode("utf-8")
    raw = raw.removeprefix(codecs.BOM_UTF8)
    try:
        return line_ends(raw.decode("utf-8")), None
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        if all(c.isascii() or c == "\ufffd" for c in text) and (
            # Accents among Latin words, not a script of its own written in one-byte
            # letters (Windows-1251 Russian read as Windows-1252 looks like real text);
            # a short text says too little to tell.
            (high := sum(b > 0x7F for b in raw)) <= 3
            or high < sum(c.isascii() and c.isalpha() for c in text)
        ):
            try:
                text = raw.decode("cp1252")
            except UnicodeDecodeError:  # a byte Windows-1252 leaves undefined
                text = raw.decode("latin-1")
            reason = "not UTF-8: read as Windows-1252 (Latin-1); save it as UTF-8 to be sure"
        else:
            reason = f"invalid UTF-8 replaced with U+FFFD ({exc.reason} at byte {exc.start})"
        return line_ends(text), reason


def path_text(path: str | PathLike[str]) -> str:
    """``path`` as text any UTF-8 store takes: the bytes of a name that is not UTF-8 (which
    Python keeps as lone surrogates) written as ``\\xe9``; any other path unchanged."""
    text = fspath(path)
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple:
    """A sort key that orders the runs of digits in ``text`` by their value, so that
    ``list.json:2`` comes before ``list.json:10`` (plain text order puts ``:10`` first).
    A total order: ``01`` and ``1`` compare equal in value and then as text."""
    parts = _DIGITS.split(text)
    return tuple((int(p), p) if i % 2 else p for i, p in enumerate(parts))


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``count`` and the noun that agrees with it, digits grouped: ``"1 note"``,
    ``"1,200 notes"``; ``nouns`` is the plural when it is not ``noun + "s"``."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def ensure_period(sentence: str) -> str:
    """``sentence`` ending with terminal punctuation."""
    sentence = sentence.strip()
    if not sentence:
        return sentence
    # A closing quote or bracket after the stop ends it too ('said "stop."', "(at once.)").
    # Other scripts' stops too: Devanagari's danda, full-width, Arabic, Armenian, Ethiopic,
    # Burmese and Tibetan ones.
    if sentence.rstrip("\"')]”’»」』")[-1:] in tuple(".!?…‼⁉。！？．｡।॥؟۔։።။།"):
        return sentence
    if sentence[-1] in ":;,":
        sentence = sentence[:-1]
    return sentence + "."


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A light suffix stripper ("indexing" → "index"), keeping at least 3 characters:
    enough for matching a question's words inside a text."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_hash(*parts: Any, length: int = 32) -> str:
    """The first ``length`` hex digits of sha256 over ``parts`` (each as ``str``, joined by
    NUL): the data version of anything made of a few values."""
    payload = "\x00".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:length]


def hash_rows(rows: Iterable[Any], length: int = 32) -> str:
    """The first ``length`` hex digits of sha256 over the ``repr`` of each row in order:
    the data version of a query result (same rows, same order → same hash)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(repr(row).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()[:length]


# A line opening or closing a fenced code block (CommonMark: up to 3 spaces of indent).
FENCE_LINE = re.compile(r"^\s{0,3}(```|~~~)")


def close_open_fence(text: str) -> str:
    """``text`` with a closing fence added when it ends inside a fenced code block (a note
    whose last block was never closed): in a pack, an open fence turns every item after
    it into code. Any other text is returned as it is."""
    opened: str | None = None
    for line in text.split("\n"):
        fence = FENCE_LINE.match(line)
        if fence is None:
            continue
        if opened is None:
            opened = fence.group(1)
        elif fence.group(1) == opened:
            opened = None
    return text if opened is None else f"{text.rstrip(chr(10))}\n{opened}"
