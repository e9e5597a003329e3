"""Replace secrets in transcript text with ``[REDACTED:<kind>]`` before anything is stored.

One compiled alternation, one pass per text that holds a trigger literal. Kinds:
``anthropic_key`` (``sk-ant-``), ``openai_key`` (``sk-``, ``sk-proj-``), ``aws_access_key``
(``AKIA``/``ASIA``), ``github_token`` (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``,
``github_pat_``), ``google_api_key`` (``AIza``), ``slack_token`` (``xox?-``), ``bearer``
(``Bearer <token>``), ``private_key`` (PEM blocks) and ``env_secret`` (``NAME=value``
where NAME contains PASSWORD, SECRET, TOKEN, API_KEY, ...).

To stay quiet on ordinary code, ``env_secret`` fires only for UPPER_CASE names written
``NAME=value`` (no spaces, as in .env files and shell) or ``NAME = "literal"`` (a quoted
literal), where the value has at least 6 characters, is not only digits, and is not a
reference such as ``$VAR``, ``os.environ[...]`` or ``None``.
"""

from __future__ import annotations

import re
from collections import Counter

_ENV_NAME = (
    r"(?:[A-Z][A-Z0-9_]*?)?(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|AUTH_KEY)"
    r"(?:_[A-Z0-9_]*)?"
)
_PATTERN = re.compile(
    r"(?P<private_key>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----)"
    r"|(?P<anthropic_key>\bsk-ant-[A-Za-z0-9_\-]{20,})"
    r"|(?P<openai_key>\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})"
    r"|(?P<aws_access_key>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"
    r"|(?P<github_token>\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}))"
    r"|(?P<google_api_key>\bAIza[0-9A-Za-z_\-]{35})"
    r"|(?P<slack_token>\bxox[abposr]-[A-Za-z0-9\-]{10,})"
    r"|(?P<bearer_head>\b[Bb]earer\s+)(?P<bearer>[A-Za-z0-9\-._~+/]{16,}=*)"
    rf"|(?P<env_head>\b{_ENV_NAME}(?:=|\s*[:=]\s*(?=[\"'])))"
    r"(?P<env_q>[\"']?)(?!(?:None|null|true|false|True|False|undefined)\b)(?![0-9]+\b)"
    r"(?P<env_secret>[^\s\"'`$(){}\[\]<>,;]{6,})(?P=env_q)(?![(\[.\w])"
)
# Every secret the pattern matches holds one of these literals. A text holding none (almost
# every event of a transcript) is returned as it is without running the alternation, which
# costs about ten times more than looking for them.
_TRIGGERS = re.compile(
    "|".join(
        re.escape(literal)
        for literal in (
            "PRIVATE",  # PEM blocks, PRIVATE_KEY
            "sk-",
            "AKIA",
            "ASIA",
            "ghp_",
            "gho_",
            "ghu_",
            "ghs_",
            "ghr_",
            "github_pat_",
            "AIza",
            "xox",
            "earer",  # Bearer, bearer
            "PASSW",  # PASSWORD, PASSWD
            "SECRET",
            "TOKEN",
            "API_KEY",
            "APIKEY",
            "ACCESS_KEY",
            "AUTH_KEY",
        )
    )
)

_KINDS = (
    "private_key",
    "anthropic_key",
    "openai_key",
    "aws_access_key",
    "github_token",
    "google_api_key",
    "slack_token",
    "bearer",
    "env_secret",
)


def _replace(match: re.Match[str], counts: Counter[str] | None) -> str:
    kind = match.lastgroup
    if kind == "env_q" or kind is None:  # lastgroup can name the closing quote group
        kind = "env_secret"
    if counts is not None:
        counts[kind] += 1
    if kind == "bearer":
        return f"{match.group('bearer_head')}[REDACTED:bearer]"
    if kind == "env_secret":
        quote = match.group("env_q") or ""
        return f"{match.group('env_head')}{quote}[REDACTED:env_secret]{quote}"
    return f"[REDACTED:{kind}]"


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    if not isinstance(text, str):
        raise TypeError(f"redact() expects str, got {type(text).__name__}")
    if _TRIGGERS.search(text) is None:
        return text
    return _PATTERN.sub(lambda m: _replace(m, None), text)


def redact_counts(text: str) -> tuple[str, Counter[str]]:
    """Like :func:`redact`, also returning how many secrets of each kind were replaced."""
    if not isinstance(text, str):
        raise TypeError(f"redact_counts() expects str, got {type(text).__name__}")
    counts: Counter[str] = Counter()
    if _TRIGGERS.search(text) is None:
        return text, counts
    return _PATTERN.sub(lambda m: _replace(m, counts), text), counts


SECRET_KINDS: tuple[str, ...] = _KINDS
