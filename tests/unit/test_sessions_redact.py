"""Redaction: every kind is caught, ordinary code is left alone, and parsed events are clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.sessions import redact as redact_module
from selene_dag.sessions.parsers import parse_file
from selene_dag.sessions.redact import SECRET_KINDS, redact, redact_counts
from tests.support.sessions import ALL_FILES, PLANTED, REAL_CLAUDE, plant_secrets, secret_values

# The pattern's alternatives without their lookarounds and back-reference (which
# ``from_regex`` cannot generate): each still matches what its branch matches, and more.
_ENV = redact_module._ENV_NAME
_BRANCHES = [
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    r"sk-ant-[A-Za-z0-9_\-]{20,}",
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",
    r"[Bb]earer\s+[A-Za-z0-9\-._~+/]{16,}=*",
    rf"{_ENV}(?:=|\s*[:=]\s*)[\"']?[^\s\"'`$(){{}}\[\]<>,;]{{6,}}[\"']?",
]


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_each_kind_is_redacted(kind: str) -> None:
    secret = PLANTED[kind]
    text, counts = redact_counts(f"before {secret} after")
    assert counts == {kind: 1}
    assert f"[REDACTED:{kind}]" in text
    assert text.startswith("before ") and text.endswith(" after")
    for value in secret_values():
        assert value not in text


def test_all_kinds_are_planted() -> None:
    assert set(PLANTED) == set(SECRET_KINDS)


def test_env_assignments_keep_their_name() -> None:
    text = 'export GITHUB_TOKEN=abcdef123456\nAPI_KEY="s3cr3tvalue"\nSECRET_KEY = "django-insecure"'
    assert redact(text) == (
        'export GITHUB_TOKEN=[REDACTED:env_secret]\nAPI_KEY="[REDACTED:env_secret]"\n'
        'SECRET_KEY = "[REDACTED:env_secret]"'
    )


ORDINARY_CODE = """
API_KEY = os.environ["API_KEY"]
MAX_TOKENS=4000
TOKEN_TTL=3600
token = get_token()
PASSWORD = None
SECRET=$SECRET
TOKEN=${TOKEN}
self.api_key = api_key
if TOKEN_LIMIT > 5:
    SECRET_KEY = settings.SECRET_KEY
const API_KEY = process.env.API_KEY;
from sklearn.model_selection import train_test_split  # sk-learn, skip-navigation
headers = {"Authorization": f"Bearer {token}"}
AKIA = "short"
def test_password_reset(client): ...
"""


def test_no_false_positives_on_ordinary_code() -> None:
    assert redact(ORDINARY_CODE) == ORDINARY_CODE


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name[:40])
def test_real_sessions_are_mostly_untouched(path: Path) -> None:
    """The fixtures hold no real secret; only .env-example lines may be matched."""
    for event in parse_file(path).events:
        _, counts = redact_counts(event.text)
        assert set(counts) <= {"env_secret"}


def test_planted_secrets_never_survive_parsing_plus_redaction(tmp_path: Path) -> None:
    planted = plant_secrets(REAL_CLAUDE, tmp_path / "planted.jsonl")
    events = parse_file(planted).events
    joined = "\n".join(e.text for e in events)
    assert all(v in joined for v in secret_values())  # planted for real
    cleaned = "\n".join(redact(e.text) for e in events)
    for value in secret_values():
        assert value not in cleaned


def test_type_errors() -> None:
    with pytest.raises(TypeError):
        redact(None)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_secret_holds_a_trigger_literal(data: st.DataObject) -> None:
    # The literal prefilter may skip the pattern only where it cannot match: anything the
    # pattern's alternation matches holds one of the trigger literals.
    branch = data.draw(st.sampled_from(_BRANCHES))
    secret = data.draw(st.from_regex(branch, fullmatch=True))
    assert redact_module._TRIGGERS.search(secret), secret


def test_text_without_a_trigger_is_returned_as_is() -> None:
    text = "def f(x):\n    return x + 1  # sk_live is not a trigger\n"
    assert redact(text) is text
    assert redact_counts(text) == (text, {})
