"""Shared helpers for the sessions tests: fixture paths and independent raw-JSON counters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selene_dag.config import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
CLAUDE_FILES = sorted((FIXTURES / "claude").glob("*.jsonl"))
CODEX_FILES = sorted((FIXTURES / "codex").glob("*.jsonl"))
GEMINI_FILES = sorted((FIXTURES / "gemini").glob("*.json*"))
ALL_FILES = CLAUDE_FILES + CODEX_FILES + GEMINI_FILES
REAL_CLAUDE = FIXTURES / "claude" / "claude-code-log_326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl"
REAL_CODEX = (
    FIXTURES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
)
REAL_GEMINI = FIXTURES / "gemini" / "VibeCodingTracker_gemini.jsonl"

# One planted secret per redaction kind (all fake, built so no scanner flags this file).
PLANTED = {
    "anthropic_key": "sk-ant-" + "api03-" + "Zq9" * 12,
    "openai_key": "sk-" + "proj-" + "Tx7" * 10,
    "aws_access_key": "AKIA" + "QWERTYUIOPASDFGH",
    "aws_secret_key": "my AWS secret key is " + "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
    "github_token": "ghp_" + "a1B2" * 10,
    "google_api_key": "AIza" + "SyB" * 11 + "xy",
    "slack_token": "xoxb-" + "123456789012-" + "AbCdEfGhIjKl",
    "bearer": "Bearer " + "eyJhbGciOi" + "JIUzI1NiJ9abcdef",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA"
    + "q" * 40
    + "\n-----END RSA PRIVATE KEY-----",
    "env_secret": "DB_PASSWORD=" + "hunter2" + "Secret99",
    "stripe_key": "sk_" + "live_" + "51Hx" * 6,
    "basic_auth": "Authorization: Basic " + "dXNlcjpw" + "YXNzd29yZA==",
    "url_password": "postgres://admin:" + "Zq9" + "hunter22" + "@db.example.com/app",
    "config_secret": "aws_secret_access_key = " + "wJalrXUtnFEMI/" + "K7MDENGbPxRfiCY",
    "user_password": "curl -u admin:" + "s3cret" + "Pw9 https://api.example.com",
    "npm_token": "npm_" + "Qx7bR2" * 6,
    "gitlab_token": "glpat-" + "Zx9Yw8" * 4,
    "webhook_url": "https://hooks.slack.com/services/" + "T0AB12CD/B0EF34GH/" + "pQ9rS8tU7vW6",
    "cookie": "Cookie: " + "sessionid=" + "k3y9Zq0w8Xv",
    "huggingface_token": "hf_" + "aBcDeFgHiJkLmNoPq" * 2,
    "sendgrid_key": "SG." + "ngeVfQFYQlKU" + "0ufo8x5d1A." + "TwL2iGABf9DH" * 3 + "x5cr1s5",
    "azure_key": "AccountName=acme;AccountKey=" + "Zm9vYmF5" * 11 + "==;Endpoint",
    "jwt": "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0In0" + ".c2lnbmF0dXJlX2hlcmU",
    "service_token": "gsk_" + "Qw3rTy7u" * 6,
}


def secret_values() -> list[str]:
    """The parts of each planted secret that must never survive redaction."""
    values = []
    for kind, text in PLANTED.items():
        if kind == "bearer":
            values.append(text.split(" ", 1)[1])
        elif kind == "basic_auth":
            values.append(text.rsplit(" ", 1)[1])
        elif kind == "url_password":
            values.append(text.split(":")[2].split("@")[0])
        elif kind == "user_password":
            values.append(text.split(":")[1].split()[0])
        elif kind == "webhook_url":
            values.append(text.removeprefix("https://hooks.slack.com/services/"))
        elif kind == "cookie":
            values.append(text.split("=", 1)[1])
        elif kind in ("env_secret", "config_secret"):
            values.append(text.split("=", 1)[1].strip())
        elif kind == "private_key":
            values.append("MIIEpAIBAAKCAQEA")
        elif kind == "azure_key":
            values.append(text.split("AccountKey=")[1].split(";")[0])
        elif kind == "aws_secret_key":
            values.append(text.rsplit(" ", 1)[1])
        else:
            values.append(text)
    return values


def plant_secrets(source: Path, target: Path) -> Path:
    """Copy a Claude transcript adding one user prompt per planted secret (same envelope)."""
    lines = source.read_text(encoding="utf-8").splitlines()
    template = next(json.loads(line) for line in lines if json.loads(line).get("type") == "user")
    extra = []
    for i, (kind, secret) in enumerate(PLANTED.items()):
        record = dict(template)
        record["uuid"] = f"00000000-0000-4000-8000-{i:012d}"
        record.pop("isMeta", None)
        record["message"] = {
            "role": "user",
            "content": f"```\nplease use this {kind}: {secret}\n```",
        }
        extra.append(json.dumps(record))
    target.write_text("\n".join(lines + extra) + "\n", encoding="utf-8")
    return target


def raw_lines(path: Path) -> list[dict]:
    """Every JSON object line of a JSONL file (stdlib json, independent of the parsers)."""
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def offline_settings(home: Path, claude_root: Path, **env: str) -> Settings:
    """Settings of a home reading the Claude transcripts under ``claude_root``, offline (the
    extractive engine, no CLI assessor), at a fixed day; ``env``: more SELENE_* values."""
    from selene_dag.config import load_settings

    return load_settings(
        {
            "SELENE_SESSION_ROOTS": f"claude={claude_root}",
            "SELENE_LLM": "extractive",
            "SELENE_CLI_ASSESSORS": "",
            "SELENE_NOW": "2026-05-01T00:00:00Z",
            **env,
        },
        home=home,
    )
