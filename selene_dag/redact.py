"""Replace secrets in transcript text with ``[REDACTED:<kind>]`` before anything is stored.

Kinds: ``private_key`` (PEM and PGP blocks, also cut before their END line),
``anthropic_key`` (``sk-ant-``), ``openai_key`` (``sk-``, ``sk-proj-``), ``stripe_key``
(``sk_live_``, ``rk_test_``, ...), ``aws_access_key`` (``AKIA``/``ASIA``), ``aws_secret_key``
(40 characters of base64 near "aws" or "secret"), ``github_token``
(``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``, ``github_pat_``), ``google_api_key``
(``AIza``), ``huggingface_token`` (``hf_``), ``sendgrid_key`` (``SG.….…``), ``azure_key`` (a
connection string's ``AccountKey=``/``SharedAccessKey=``), ``slack_token`` (``xox?-``,
``xapp-``), ``npm_token`` (``npm_``), ``service_token`` (DigitalOcean, Shopify, Databricks,
Heroku, Atlassian, Linear, PyPI, Groq, Replicate, Perplexity, xAI, Tavily, NVIDIA, Mailgun
and HashiCorp Vault tokens, by their prefixes; Mailchimp keys, ``…-us21``), ``jwt`` (a JSON Web Token anywhere), ``gitlab_token``
(``glpat-``, ``glcbt-``, ...), ``webhook_url`` (Slack and Discord webhook URLs), ``cookie`` (a
``Cookie:``/``Set-Cookie:`` header's value, ``curl --cookie``/``-b``, a ``cookies={…}``
dict; not a setting such as ``theme=dark; lang=en``), ``bearer`` (``Bearer
<token>``, ``Authorization: Token <token>``, ``Bot …``, ``SSWS …``), ``basic_auth``
(``Authorization: Basic <credentials>``, a registry's ``"auth": "<base64 user:password>"``,
npm's ``_auth=``, a ``.dockerconfigjson``), ``url_password`` (the password of ``scheme://user:password@host``),
``user_password`` (a password on a command line: ``curl -u user:password`` (not docker's ``-u user:group``),
``jdbc:oracle:thin:user/password@``, ``sqlplus user/password``, ``mysql
-ppassword``, ``sshpass -p value``, ``docker login -p value``, ``--password value``,
``--api-key value``, ``htpasswd -b file user password``, ``net use \\\\srv\\share password``,
``net user name password /add``, a query string's ``&pwd=value``, ``redis-cli -a``,
``requirepass``, ``AUTH`` at redis-cli's prompt, on its command line or echoed to it,
``REDISCLI_AUTH=``, ``vault login TOKEN``,
httpie's and xh's ``-a user:password``, ``lftp -u user,password``, curl's ``--proxy-user``
and ``-U``, ``ldappasswd -s``, a ``.netrc`` line, a ``.pgpass`` line, ``sqlcmd -P``, the mongo
tools', ``oc login``'s, ``az login``'s and ``twine upload``'s ``-p``, the ldap tools' ``-w``,
``smbclient -U user%password``, keytool's ``-storepass``, ``ssh-keygen -N``/``-P``, ``zip``/``unzip -P``,
``openssl enc -k``, 7-Zip's ``-p…``, curl in an exec-form list
(``["curl", "-u", "user:password"]``), ``ConvertTo-SecureString "…"``,
``gh secret set --body``, ``az keyvault secret set --value``, ``aws secretsmanager
--secret-string``, ``dotnet user-secrets set KEY VALUE``, a password said in words:
``the password you need is …``, ``the password Xk9mQ2vLp7 was exposed``), ``env_secret`` (``NAME=value`` where NAME is upper case and contains
PASSWORD, SECRET, TOKEN, API_KEY, ...; also a Kubernetes or ECS environment list's
``name: DB_PASSWORD`` / ``value: …`` and a Dockerfile's ``ENV DB_PASSWORD value``) and ``config_secret`` (such names in any case, as a
config file, a JSON object or code assigns them: ``password: hunter22``, ``"apiKey": "…"``,
``aws_secret_access_key = wJalr…``, ``os.environ["OPENAI_API_KEY"] = "…"``, ``token :=
"…"``, ``api_key => '…'``, ``x-api-key: …``, ``<password>…</password>``, ``<add key="ApiKey"
value="…"/>``, a connection string's ``Pwd=…;``, ``passphrase: "…"``, a Terraform ``variable "db_password"``'s ``default``; the short names
``pass`` and ``pwd``, alone or as a name's last word, ``db_pass = "…"``, when the value holds a
digit or a symbol and is no path).

Also ``config_secret``: an API key or token said in words (``my API key is 9f8e…``, 16
characters or more with a letter and a digit). A private key in base64 (``LS0tLS1CRUdJTi…``)
is a ``private_key``. Every kind also finds its secret right after a JSON escape
(``\\nghp_…``, ``\\nDB_PASSWORD=…``): a tool's input is stored as JSON text.

To stay quiet on ordinary code, a ``config_secret`` name must end with the secret word
(``max_tokens``, ``tokenizer`` and ``password_hash`` are not secrets), and a value must have
at least 6 characters, not be only digits (``2024-Summer!`` is a value), and not be a
reference such as ``$VAR``, ``{{ var }}``, ``<your-key>``, ``os.environ[...]``,
``process.env.API_KEY``, a call, a path (``~/.ssh/id_ed25519``), a YAML tag (``!vault``) or
``None``; a quoted value of words a user is shown (``"Forgot password?"``, ``"Password is
required"``) is a label, except for a passphrase. An environment name that says where or
what the secret is (``POSTGRES_PASSWORD_FILE``, ``OAUTH_TOKEN_URL``, ``TOKEN_TYPE``,
``ACCESS_KEY_ID``) is not a secret's.
``env_secret`` takes such a value written ``NAME=value`` (no spaces, as in .env files and
shell) or a quoted literal; ``config_secret`` takes a quoted literal (past its escaped
quotes), or an unquoted value that holds a digit or a symbol (so ``password =
user_password`` stays, ``password: hunter22`` goes), or any value of a connection string's
``Pwd=``/``Password=`` (no spaces around ``=``, a ``;`` and another pair beside it). A
``--password value`` takes a value after one space that holds a digit or a symbol, or a
quoted one (a help text's ``--password TEXT Password to use`` stays). An unquoted value ends
at a backslash, so a secret inside JSON-escaped text (``API_TOKEN=abc123\\nPORT=8080``)
takes only itself with it. Placeholders (``********``, ``sk-ant-...``, ``xxxxxx``,
``<token>``, ``your-api-key``) are left as they are.

Each kind runs only on a text holding its trigger (a literal such as ``sk-``, or a secret's
name followed by ``:`` or ``=``), found by plain substring searches: most events of a
transcript hold none, and a regular expression tried at every position of a long tool output
costs ten times more than looking. The assignment kinds are matched only where such a name
starts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

# An upper-case name up to its secret word: DB_PASSWORD, STRIPE_SECRET (of _KEY).
_LONG_SECRET_WORDS = (
    r"PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|AUTH_KEY|APP_KEY"
    r"|APPLICATION_KEY|MASTER_KEY|ENCRYPTION_KEY|SIGNING_KEY|REDISCLI_AUTH"
)
_ENV_SECRET_WORD = (
    rf"(?:[A-Z][A-Z0-9_]{{0,63}}?)?(?:{_LONG_SECRET_WORDS}|(?<=_)PASS(?![A-Z])|(?<=_)PWD)"
)
_ENV_NAME = (
    _ENV_SECRET_WORD
    # (Bounded: each end below is looked at from every place the rest could end.)
    + r"(?:_[A-Z0-9_]{0,64})?"
    # Not a name that says where the secret is or what it is like: POSTGRES_PASSWORD_FILE,
    # OAUTH_TOKEN_URL, TOKEN_TYPE, ACCESS_KEY_ID.
    + "".join(
        f"(?<!_{word})"
        for word in (
            "FILE",
            "PATH",
            "DIR",
            "URL",
            "URI",
            "ENDPOINT",
            "HOST",
            "PORT",
            "TYPE",
            "PREFIX",
            "HEADER",
            "NAME",
            "ID",
            "TTL",
            "EXPIRY",
            "LENGTH",
            "SIZE",
            "LIMIT",
            "TIMEOUT",
            "PERMISSIONS",
            "SCOPE",
            "SCOPES",
            "ENABLED",
            "REQUIRED",
            "FIELD",
            "PARAM",
            "USER",
            "USERNAME",
            "REGION",
            "MODE",
            "FORMAT",
            "VERSION",
            "ALGORITHM",
            "ISSUER",
            "AUDIENCE",
            "ARN",
            "AGE",
            "POLICY",
            "STORE",
        )
    )
)
# A setting or a placeholder where an environment list or ENV gives a value (USE_TOKEN_V2
# enabled, AUTH_TOKEN_LOCAL localhost): no secret.
_SETTING_WORD = (
    r"(?!(?i:enabled|disabled|true|false|yes|no|on|off|none|localhost|placeholder|changeme)"
    # The value ends with the word, or with lower-case words joined to it (disabled-in-ci):
    # "On#Call2024!x", "No-Entry-2024!" are passwords.
    r"(?=(?:[\-_.][a-z]{1,20}){0,6}(?:\\?[\"']|\\[rnt]|[\s,}\]]|$)))"
)
# A stage, a region, a role or a version after a secret word: DB_PASSWORD_PROD_RO,
# API_KEY_V2, GITHUB_TOKEN_CI, DB_PASSWORD_EU.
_STAGE = (
    r"_(?:PROD|PRODUCTION|DEV|DEVELOPMENT|STAGING|STAGE|TEST|TESTING|QA|UAT|CI|E2E|INT"
    r"|SANDBOX|PREVIEW|DEMO|LIVE|LOCAL|RO|RW|READONLY|READ|WRITE|READER|WRITER|REPLICA|ADMIN"
    r"|OLD|NEW|PREV|NEXT|CURRENT|PRIMARY|SECONDARY|BACKUP|BASE|MAIN|EU|US|UK|APAC|EMEA|AMER"
    r"|V?[0-9]{1,4})"
)
# Upper case, ending with the secret word (DB_PASSWORD, STRIPE_SECRET_KEY, SECRETKEY), or
# with it and up to two stages (not PASSWORD_HASHER or TOKEN_NAMESPACE): the name of an
# environment list's entry.
_NAME_END = rf"(?:_?KEY)?(?:{_STAGE}){{0,2}}(?![A-Za-z0-9_])"
_ENV_NAME_END = _ENV_SECRET_WORD + _NAME_END
# Any case, ending with the secret word: db_password, apiKey, accessToken, client_secret,
# x-api-key, SECRET_KEY.
_CONFIG_NAME = (
    r"[A-Za-z0-9_\-]{0,64}?"
    r"(?i:password|passwd|secret|token|(?:api|access|private|auth|secret|app|application)[_-]?key"
    r"|rediscli_auth)"
)
# The short names, ``pass`` and ``pwd``: alone or as the last word of a name (``db_pass``,
# ``mysql-pwd``, ``dbPass``), not inside one (``bypass``, ``compass``, ``OLDPWD``).
_SHORT_NAME = (
    r"(?:[A-Za-z0-9_\-]{0,63}[_\-]|[A-Za-z0-9_\-]{0,63}[a-z0-9](?=P))?"
    r"(?:pass|pwd|Pass|Pwd|PASS|PWD)"
)
# A reference, not a value: $VAR, ${VAR}, *, {{ var }}, <your-key>, [list], %VAR%.
_NOT_A_REFERENCE = r"(?![$*{<\[])(?!%[A-Za-z_]\w*%)"
# Only digits up to the value's end (``2024-Summer!`` is a value, ``4000,`` is not).
_ONLY_DIGITS = r"(?![0-9]+(?:[\s\"'`,;)\]}&\\]|$))"
_NOT_A_VALUE = (
    r"(?!(?:None|null|nil|true|false|True|False|undefined)\b)" + _ONLY_DIGITS + r"(?!\[REDACTED)"
    # A reference ($VAR, ${VAR}, {{ var }}, <your-key>), a YAML tag (!vault) or a list.
    r"(?![$*{<\[!])(?!%[A-Za-z_]\w*%)"
    # A path (``~/.ssh/id_ed25519``, ``./keys/private.pem``, ``/run/secrets/db``).
    r"(?!(?:~|\.\.?)?/[A-Za-z0-9._\-])"
    # Code naming where the value is, unquoted: ``process.env.API_KEY!``, ``env.GH_TOKEN``,
    # ``settings.secret``: a chain from a code root, one ending in a constant's name (letters
    # or with an underscore: not ``Acme.PROD2024``), or a chain of lower-case names ending
    # in a snake_case name without a digit (``oauth2.access_token``; not ``foo.bar_baz9``).
    # A dotted password is none of these (``Spring.Time2024!``, ``correct.horse1``).
    r"(?!(?:(?:process|env|os|import|meta|config|cfg|conf|settings|self|this|options|opts"
    r"|args|ctx|app|secrets|vars|params|props|window|globalThis|Deno|Bun)\."
    r"(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*"
    r"|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\.(?:[A-Z_]+|[A-Z_][A-Z0-9]*_[A-Z0-9_]*)"
    r"|[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*\.[a-z]+_[a-z_]+)"
    r"[!?]?(?![^\s,;)\]}]))"
)
# How a password is kept or checked, said in prose after "the password is": a hash or
# cipher's name, or a word with a "-hashed"/"-only" kind of ending.
_KEPT_HOW = (
    r"(?i:sha-?\d+|md5|bcrypt|scrypt|argon2\w*|pbkdf2\w*|aes-?\d+\w*|rsa-?\d+|base64"
    r"|oauth2?|2fa|mfa|e2e|http/\d|utf-?8)(?![A-Za-z0-9])"
    r"|[^\s\"'`<>(){}\[\],;\\]*-(?i:hashed|encrypted|encoded|salted|derived|protected|based"
    r"|generated|managed|only|tested|safe|compliant|signed)(?![A-Za-z])"
)
# An unquoted value: up to a space, a quote, a bracket, a separator (``&`` of a query
# string included) or a backslash.
_BARE = r"[^\s\"'`(){}\[\]<>,;&\\]"
# Where a bare value ends: not before a call or an index (``get_secret(``), or, taken to
# its bound (its first 256 characters: a bound keeps a run of trigger words linear), before
# the rest of it (``_redact_assignments`` redacts that too).
_BARE_END = rf"(?:(?={_BARE})|(?![(\[]))"
_BARE_RUN = re.compile(rf"{_BARE}*")
# A quoted value's character: up to its closing quote, past an escape (``\\"``, ``\\n``) and a
# quote of the other kind; not across lines.
_QUOTED = r"(?:(?!(?P=q))(?:\\.|[^\n\\`]))"


@dataclass(frozen=True)
class _Rule:
    """One kind: its pattern (groups ``head`` and ``q`` stay around the replaced value) and
    the substrings one of which every match holds."""

    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]
    keep: Callable[[str], bool] | None = None  # a value it matches but leaves
    keep_match: Callable[[re.Match[str]], bool] | None = None  # a match it leaves, by place


# A word boundary, or the end of a JSON escape (``\\n``, ``\\t``, ``\\r``): a tool's input is
# stored as JSON text, where a key at a line's start follows the escape's ``n``, a word
# character (``\\nghp_…`` has no ``\\b`` before ``ghp_``).
_BOUNDARY = r"(?:\b|(?<=\\[nrt]))"


def _rule(kind: str, pattern: str, *triggers: str) -> _Rule:
    # Only a \b that opens a word (before a letter, a group or a class that is not negated):
    # the one that closes it needs no escape, and each alternative costs a look.
    opening = r"(?<!\\)\\b(?=[A-Za-z(]|\[(?!\^))"
    return _Rule(kind, re.compile(re.sub(opening, lambda _: _BOUNDARY, pattern)), triggers)


# A run of letters that reads as a word of an identifier (``With``, ``Client``, ``reset``):
# four letters or more, a vowel among them. A made password seldom holds one.
_WORDLIKE = re.compile(r"[A-Z][a-z]{3,}|(?<![A-Za-z])[a-z]{4,}")


def _names_a_thing(value: str) -> bool:
    """Whether ``value`` reads as an identifier (``PBKDF2WithHmacSHA256``, ``OAuth2Client``,
    ``x86_64Linux``) rather than a made secret (``PgKtjz4IJWUaxP9x``): words (runs of
    letters with a vowel) make up at least 30% of it. A random key holds a word by chance
    (``xUZp3MPJpymPXy7gl3q2gskJ2iKV3DAy`` holds "pymp"), seldom that much of one."""
    worded = sum(
        len(word) for word in _WORDLIKE.findall(value) if set(word.lower()) & set("aeiouy")
    )
    return worded >= 0.3 * len(value)


# An option of htpasswd, with the cost -C takes.
_HTPASSWD_OPTION = r"[ \t]+-[A-Za-z]+(?:[0-9]+|[ \t]+[0-9]+)?"

# A command-line argument that is a value: quoted (to its closing quote), or a word that is
# no option and no reference; never past a backslash (a JSON escape after it stays).
_ARG_VALUE = (
    r"(?:(?P<q>\\?[\"'])" + _NOT_A_REFERENCE + r"[^\"'\n\\]+(?P=q)"
    r"|(?![$*{<\[\-])(?!%[A-Za-z_]\w*%)[^\s\"'\\]+)"
)


# Between a tool and its flag: anything on the command line; no word that starts another
# command in prose ("then mvn -Pintegration"), nor the end of a JSON string (a later field).
_ANY_GAP = r"[^\n|;&]{0,200}?"
_OWN_GAP = (
    r"(?:(?!(?<![^\s,])(?:then|and|or|after|before|later|also|next|run|is|are|was|were"
    r"|installed)(?![^\s,])|\\?\"\s*[,}:])[^\n|;&]){0,200}?"
)


# redis-cli's prompt (127.0.0.1:6379> , host:6380[2]> ): a port, maybe a db number (sqlcmd's
# prompt "1> " is no Redis prompt).
_REDIS_PROMPT = (
    "(?:"
    + "|".join(
        rf"(?<=:[0-9]{{{port}}}{db}> )"
        for port in range(2, 6)
        for db in ("", r"\[[0-9]\]", r"\[[0-9][0-9]\]")
    )
    + ")"
)
_TOOL_FLAG_TRIGGERS = ("sqlcmd", "bcp", "ldap", "redis-cli")
# After a flag, a word of prose about it, not its value ("-a to pass the password").
_NOT_PROSE = r"(?!(?:to|the|a|an|and|or|is|for|with|option|flag|switch|argument)\b)"


def _tool_flag(gap: str) -> str:
    """sqlcmd/bcp's -P, the ldap tools' -w, redis-cli's -a, ``gap`` between the tool and
    its flag."""
    return (
        rf"\b(?:(?:sqlcmd|bcp)\b{gap}(?<!\S)-P"
        rf"|ldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn)\b{gap}(?<!\S)-w"
        rf"|redis-cli\b{gap}(?<!\S)-a)"
    )


# Commands whose -u names a user (and group), never a password: docker run -u app:staff.
# A command word: where a command starts (the line's start, a blank, a quote, a separator)
# and followed by a blank; not a word inside a URL or a file name (…/docker-build/…).
_USER_OPTION_COMMANDS = re.compile(
    # Where a command starts: the line's start, a blank, a quote, a separator, the end of a
    # JSON escape (\\n: a tool's input); a program may be named by its path
    # (/usr/bin/curl, curlimages/curl) only where its -u is a password's.
    # (Not a value of curl's -A / --user-agent: curl -A docker -u admin:….)
    r"(?:(?:^|(?<=[\s;|&(`\"'])|(?<=\\[nrt]))(?<!-A )(?<!-agent )"
    r"(?P<user>docker|docker-compose|podman|nerdctl"
    r"|kubectl|sudo|su|runuser|setpriv|gosu|su-exec|chpst|ps|pgrep|pkill|crontab|systemd-run"
    r"|machinectl|ssh|(?P<short>python[0-9.]*|sort|git|pip[0-9]*|uv))"
    r"(?=[ \t])"
    # A program named by its path (/usr/bin/curl) or curl by an image (curlimages/curl:8.5.0):
    # not a data folder (-v ./data:/var/lib/mysql).
    r"|(?:(?:^|(?<=[\s;|&(`\"'])|(?<=\\[nrt])|(?<=bin/))(?P<password>curl|wget|http|httpie|xh"
    r"|ftp|lftp|sqlcmd|mongo\w*|redis-cli|mysql\w*|psql|svn)|(?<=/)(?P<image>curl))"
    r"(?=[ \t]|:[\w.\-]+[ \t]))"
)
# A quoted argument (curl -H "X-Cmd: ps aux"): a command named inside it is not the one
# whose option follows.
_QUOTED_ARGUMENT = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_ESCAPED_ARGUMENT = re.compile(r"'[^'\n]*'|\\\"(?:[^\"\\\n]|\\[^\"\n])*\\\"")


# A quoted image of curl (``"curlimages/curl:8.5.0"``, ``'alpine/curl@sha256:…'``).
_QUOTED_CURL_IMAGE = re.compile(r"(?:[\w.\-]+/)+curl(?:[:@][\w.\-:]+)?")


def _named_in_quotes(quoted: re.Match[str]) -> str:
    """A quoted argument as the owner of an option sees it: " curl " when it is an image
    of curl, else a blank (a health check's "curl -f …" is no command of its line)."""
    image = _QUOTED_CURL_IMAGE.fullmatch(quoted.group(0).strip("\\\"'"))
    return " curl " if image else " "


def _user_group_option(match: re.Match[str]) -> bool:
    """Whether the ``-u`` of ``match`` belongs to a command whose -u names a user (the
    last command named on its line before it)."""
    if match.groupdict().get("proxy") is not None:
        return False  # curl's -U: a proxy's password
    text = match.string
    groups = match.groupdict()
    at = next(match.start(g) for g in ("user", "joined", "combined") if groups.get(g) is not None)
    line = text[max(text.rfind("\n", 0, at) + 1, at - 300) : at]
    # In a tool's input (JSON) the plain quotes are the string's own.
    line = (_ESCAPED_ARGUMENT if '\\"' in line else _QUOTED_ARGUMENT).sub(_named_in_quotes, line)
    named = list(_USER_OPTION_COMMANDS.finditer(line))
    if not named or named[-1].group("user") is None:
        return False
    # python -u (unbuffered), sort -u (unique): their -u is no user, their --user may be.
    return named[-1].group("short") is None or not match.group(0).lstrip().startswith("--")


# A cookie's value that is a setting, not a session: a word, a language, a small number.
_PLAIN_COOKIE = re.compile(r"[A-Z]?[a-z]{1,11}|[a-z]{2}(?:[-_][A-Za-z]{2})?|[0-9]{1,4}")


# A cookie named for a session or a credential is never a setting, whatever its value.
_SECRET_COOKIE_NAME = re.compile(
    r"(?i:sess|auth|token|secret|pass|jwt|csrf|xsrf|login|remember"
    r"|(?:^|(?<=[_\-.]))(?:sid|key|id|user)(?=$|[_\-.]))"
)


def _plain_cookies(value: str) -> bool:
    """Whether every ``name=value`` pair of a cookie header holds a plain setting
    (``theme=dark; lang=en``); its attributes (``Path=/``, ``HttpOnly``) do not count."""
    pairs = [p.strip() for p in value.split(";")]
    name, _, first = pairs[0].partition("=")
    if not _PLAIN_COOKIE.fullmatch(first) or _SECRET_COOKIE_NAME.search(name):
        return False
    attributes = {"path", "domain", "expires", "max-age", "samesite", "secure", "httponly"}
    return all(
        k.lower() in attributes
        or (_PLAIN_COOKIE.fullmatch(v) and not _SECRET_COOKIE_NAME.search(k))
        for k, _, v in (p.partition("=") for p in pairs[1:] if p)
    )


def _base64_text(value: str) -> str:
    """``value`` decoded as base64, as far as whole groups of four characters go (a value
    may be cut short); invalid input decodes to ""."""
    import base64
    import binascii

    value = re.sub(r"\s|\\[rn]", "", value).rstrip("=")  # a wrapped one's line breaks
    try:
        return base64.b64decode(value[: len(value) - len(value) % 4]).decode("latin-1")
    except (binascii.Error, ValueError):
        return ""


def _not_credentials(value: str) -> bool:
    """Whether base64 ``value`` does not decode to ``user:password``."""
    return ":" not in _base64_text(value)


def _not_a_private_key(value: str) -> bool:
    """Whether base64 ``value`` holds no PEM private key (one may follow a certificate,
    as in a combined PEM)."""
    return "PRIVATE KEY" not in _base64_text(value)


_JWT = re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*")

# In this order: a key inside an assignment is named by its own kind, and an Anthropic key
# is not taken for an OpenAI one.
_KEY_RULES = (
    _rule(
        "private_key",
        # PEM and PGP blocks; a block cut before its END line (a truncated tool output)
        # to the end of its key material.
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:[A-Za-z0-9+/=:\- \t\r\n]|\\n)*)",
        "PRIVATE KEY",
    ),
    _rule("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", "sk-ant-"),
    _rule("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", "sk-"),
    _rule("stripe_key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", "k_live_", "k_test_"),
    _rule("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "AKIA", "ASIA"),
    _rule(
        "aws_secret_key",
        # A secret access key said anywhere near "aws" or "secret" (in prose too: "my AWS
        # secret key is wJalr…"): 40 characters of base64 with a small and a capital letter
        # and a digit, alone (a git hash has no capital); "aws" and "secret" as words (not
        # "secretary", "awsRegion"), the key no path (s3://trail/AWSLogs/…: no "//" in it,
        # no "/" first).
        r"(?P<head>(?<![A-Za-z])(?i:aws|secrets?)(?![A-Za-z])[^\n]{0,40}?)(?<![A-Za-z0-9/+:])"
        r"(?!/)(?![A-Za-z0-9/+]{0,38}//)"
        r"(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[0-9])"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        "aws",
        "AWS",
        "Aws",
        "ecret",
        "ECRET",
    ),
    _rule(
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
    ),
    _rule("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}", "AIza"),
    # 34 letters (older tokens: digits too), as gitleaks takes them; an organisation's
    # token is api_org_ and 34 letters.
    _rule(
        "huggingface_token", r"\b(?:hf|api_org)_[A-Za-z0-9]{34}(?![A-Za-z0-9_])", "hf_", "api_org_"
    ),
    _rule(
        "sendgrid_key",
        r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])",
        "SG.",
    ),
    _rule(
        "azure_key",
        # A storage account's key, a Service Bus or Event Hubs shared access key: in a
        # connection string (``…;AccountName=x;AccountKey=Zm9v…==;…``, URL-encoded too), a
        # config (``account_key: …``, ``"accountKey": "…"``), an app.config ``<add
        # key="AccountKey" value="…"/>``, the az CLI's ``--account-key …``, an environment
        # (``AZURE_STORAGE_KEY=…``, ``STORAGE_ACCOUNT_KEY=…``, ``storageAccountKey: …``).
        # Base64 of 40 characters or more with its padding (a key is 44 or 88 characters,
        # ending in ``=``): a name or a path after the name is no key. URL-encoded,
        # ``%2B``, ``%2F`` and ``%3D`` are its characters, and ``%3B`` the ``;`` before it.
        r"(?P<head>(?:(?:(?<![A-Za-z0-9])|(?<=%3[bB])|(?<=[a-z])(?=A))"
        r"(?i:account[_-]?key|shared[_-]?access[_-]?key|azure_storage(?:_account)?_key)"
        r"[\"']?\s*(?:[=:]|%3[dD])\s*[\"']?"
        r"|--account-key(?:[ \t]+|=)[\"']?"
        r"|<add\s+key=\"(?i:account[_-]?key|shared[_-]?access[_-]?key)\"\s+value=\"))"
        r"(?:[A-Za-z0-9+/]|%2[bBfF]){40,}(?:={1,2}|(?:%3[dD]){1,2})(?![A-Za-z0-9+/=])",
        "ccountKey",
        "ccountkey",
        "ccount_key",
        "ccount-key",
        "ACCOUNTKEY",
        "ACCOUNT_KEY",
        "ccessKey",
        "ccesskey",
        "ccess_key",
        "ACCESSKEY",
        "ACCESS_KEY",
        "STORAGE_KEY",
    ),
    _rule("slack_token", r"\b(?:xox[abposr]|xapp-[0-9])-[A-Za-z0-9\-]{10,}", "xox", "xapp-"),
    # Tokens a prefix names: DigitalOcean, Shopify, Databricks, Heroku, Atlassian, Linear,
    # PyPI, Groq, Replicate, Perplexity, xAI, Tavily, NVIDIA, Mailgun. One rule per prefix:
    # a pattern that opens with its literal is looked for fast.
    *(
        _rule("service_token", rf"\b{pattern}(?![A-Za-z0-9_\-])", trigger)
        for trigger, pattern in (
            ("_v1_", r"do[opr]_v1_[a-f0-9]{64}"),
            ("shp", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
            ("dapi", r"dapi[a-f0-9]{32}"),
            ("HRKU-", r"HRKU-[A-Za-z0-9_\-]{30,}"),
            ("ATATT3", r"ATATT3[A-Za-z0-9_\-=]{50,}"),
            ("lin_api_", r"lin_api_[A-Za-z0-9]{40}"),
            ("pypi-AgEI", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
            ("gsk_", r"gsk_[A-Za-z0-9]{48,}"),
            ("r8_", r"r8_[A-Za-z0-9]{37}"),
            ("pplx-", r"pplx-[A-Za-z0-9]{48}"),
            ("xai-", r"xai-[A-Za-z0-9]{70,}"),
            ("tvly-", r"tvly-(?:dev-)?[A-Za-z0-9]{32}"),
            ("nvapi-", r"nvapi-[A-Za-z0-9_\-]{60,}"),
            ("key-", r"key-[0-9a-f]{32}"),
            # HashiCorp Vault: service, batch and recovery tokens.
            ("hvs.", r"hvs\.[A-Za-z0-9_\-]{24,}"),
            ("hvb.", r"hvb\.[A-Za-z0-9_\-]{24,}"),
            ("hvr.", r"hvr\.[A-Za-z0-9_\-]{24,}"),
        )
    ),
    _rule(
        "service_token",
        # A token given to `vault login` (legacy ``s.``/``b.`` tokens carry no ``hvs.``): a
        # value of 16 characters or more holding a digit, after any flags; not an auth
        # method's ``key=value`` fields, not a word of prose.
        r"(?P<head>vault\b(?<!\wvault)[ \t]+login(?:[ \t]+-[^\s=\\\"']+(?:=[^\s\\\"']*)?)*[ \t]+)"
        r"(?![^\s=\"']*=)(?=\\?[\"']?[^\s\"'\\]*[0-9])(?=\\?[\"']?[^\s\"'\\\-][^\s\"'\\]{15,})"
        + _ARG_VALUE,
        "vault",
    ),
    _rule(
        "service_token",
        # Mailchimp: its data centre (-us1 … -us21) says it; a bare "-us" (--user) is too
        # common a word to gate a look at every hex run.
        r"\b[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9_\-])",
        *(f"-us{digit}" for digit in "123456789"),
    ),
    _rule("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", "npm_"),
    _rule(
        "gitlab_token",
        # Personal, OAuth app, deploy, runner, CI job, pipeline trigger, feed, incoming
        # mail, agent, SCIM and feature-flag client tokens.
        r"\bgl(?:pat|oas|dt|rtr?|cbt|ptt|ft|imt|agent|soat|ffct)-[A-Za-z0-9_\-]{20,}",
        "glpat-",
        "gloas-",
        "gldt-",
        "glrt",
        "glcbt-",
        "glptt-",
        "glft-",
        "glimt-",
        "glagent-",
        "glsoat-",
        "glffct-",
    ),
    _rule(
        "webhook_url",
        r"(?P<head>\bhttps://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/\-]{10,}",
        "hooks.slack.com",
    ),
    _rule(
        "webhook_url",
        r"(?P<head>\bhttps://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/)"
        r"[A-Za-z0-9_\-]{20,}",
        "/api/webhooks/",
    ),
    replace(
        _rule(
            "cookie",
            # A Cookie or Set-Cookie header's value (name=value pairs), curl's --cookie.
            r"(?P<head>(?<![\w-])(?:(?i:set-cookie|cookie)[\"']?\s*:\s*[\"']?|--cookie(?:\s+|=)(?:\\?[\"'])?))"
            # name=value pairs joined by "; " (Set-Cookie's attributes may have no value). A
            # name is a token, without separators: a run of "cookie:cookie:…" is not scanned
            # to its end from every head (it was quadratic).
            r"[^\s;=:,\"'\\()<>@]{1,128}=[^\s;\"'\\]+"
            r"(?:;[ \t]?[^\s;=:,\"'\\()<>@]{1,128}(?:=[^\s;\"'\\]*)?)*",
            "ookie",
            "OOKIE",
        ),
        keep=lambda value: _plain_cookies(value),
    ),
    _rule(
        "cookie",
        # curl -b "name=value; …" (a -b without "=" names a cookie file); unquoted, one
        # pair (the shell ends the command at a ";").
        r"(?P<head>\bcurl\b[^\n|;&]{0,200}?(?<!\S)-b(?:[ \t]+|=)(?P<cq>\\?[\"'])?)"
        r"[^\s;=:,\"'\\()<>@]{1,128}=(?![$%{])[^\s;\"'\\]{4,}"
        r"(?(cq)(?:;[ \t]?[^\s;=:,\"'\\()<>@]{1,128}(?:=[^\s;\"'\\]*)?)*)",
        "curl",
    ),
    _rule(
        "cookie",
        # A cookies dict in code: requests.get(url, cookies={"sessionid": "…"}).
        r"(?P<head>(?<![\w.-])cookies\s*=\s*\{)"
        r"(?=[^{}\n]{0,256}?:\s*[\"'][^\"'\n]{4,})[^{}\n]{4,512}?(?=\})",
        "cookies",
    ),
    _rule(
        "bearer",
        r"(?P<head>\b[Bb]earer\s+|(?i:authorization)\W{0,4}(?i:token|bot|ssws)\s+)"
        r"[A-Za-z0-9\-._~+/]{16,}=*",
        "earer",
        "oken ",
        ": Bot ",
        '"Bot ',
        "SSWS ",
    ),
    replace(
        _rule(
            "jwt",
            # A JSON Web Token anywhere (its header and claims are base64 JSON: "eyJ"; a
            # header carrying a certificate chain runs to kilobytes). Every run from "eyJ"
            # matches, its claims and signature when it has them, and the rule keeps
            # the runs that are no token: a failed match would scan a long run of "eyJ-…"
            # to its end again from every "eyJ" in it.
            r"\beyJ[A-Za-z0-9_\-]*+(?:\.eyJ[A-Za-z0-9_\-]*+(?:\.[A-Za-z0-9_\-]*+)?)?",
            "eyJ",
        ),
        keep=lambda value: _JWT.fullmatch(value) is None,
    ),
    replace(
        _rule(
            "basic_auth",
            # A registry's credentials as Docker and npm keep them: ``"auth": "<base64 of
            # user:password>"``, ``_auth=…``; a Kubernetes ``.dockerconfigjson`` (base64 of
            # ``{"auths":…``).
            r"(?P<head>[\"']auth[\"']\s*:\s*[\"']|(?<![\w.-])_auth\s*=\s*[\"']?)"
            r"(?=[A-Za-z0-9+/]{8,}={0,2}(?![A-Za-z0-9+/=]))[A-Za-z0-9+/]+={0,2}"
            r"|\beyJhdXRocyI6[A-Za-z0-9+/]{16,}={0,2}",
            '"auth"',
            "'auth'",
            "_auth",
            "eyJhdXRocyI6",
        ),
        keep=_not_credentials,
    ),
    replace(
        _rule(
            "private_key",
            # A PEM private key in base64 (a Kubernetes Secret's ``tls.key``).
            # Across its line breaks (``base64`` wraps at 76 columns), escaped ones too: a
            # line after a break is more of it only when it is base64 to its end (the next
            # line of a file, ``password: …``, is not).
            r"\bLS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}+"
            r"(?:(?:\r?\n|\\[rn])[A-Za-z0-9+/]++(?=={0,2}(?:\r?\n|\\[rn]|[\s\"',]|$)))*+"
            r"={0,2}",
            "LS0tLS1CRUdJTi",
        ),
        keep=_not_a_private_key,
    ),
    replace(
        _rule(
            "user_password",
            # curl -u user:password, --user user:password (also as one quoted argument);
            # curl -ubob:password. Not a uid:gid (docker run -u 1000:1000), nor a user:group
            # of one name (docker exec -u www-data:www-data).
            # curl --proxy-user and -U alike; quotes escaped in a tool's input too.
            r"(?P<head>(?:(?<!\S)(?:-u|--user|--proxy-user)(?:\s+|=)(?P<uq>\\?[\"'])?"
            r"(?P<user>[^\s:\"'\\]+):"
            # (Not past a line break of a tool's input: rsync -avu host:path below.)
            r"|\bcurl\b(?:(?!\\[nr])[^\n|;&]){0,200}?(?<!\S)-(?:u(?P<joined>[^\s:\"'\-][^\s:\"']*)"
            # -U user:… and -Uuser:…, a proxy's.
            r"|U(?:[ \t]+|(?=[^\s\-]))(?P<pq>\\?[\"'])?(?P<proxy>[^\s:\"'\\]+)):"
            # -sSu user:…, combined flags: right after curl's own options and URLs (not
            # another tool's -avu later on the line).
            # An option's value, a URL, a host:port, a variable, a method or a quoted
            # argument may stand between; no separator (;, |, &), redirection, word of
            # prose, nor a token ending with a list's comma (curl -s, wget -q, rsync -avu).
            # (Each read one way only: an option keeps the value it took.)
            r"|\bcurl(?:\.exe)?(?:[ \t]+(?>-[^\s\\;|&<>]*(?<!,)"
            r"(?:[ \t]+[^\s\-\\;|&\"'<>][^\s\\;|&<>]*(?<!,))?"
            # A URL's query may hold "&" (a=1&b=2), not "&&" nor a trailing "&".
            r"|[a-z]+://(?:[^\s\\;|&]|&(?=[^\s\\;|&]))*(?<!,)"
            r"|[\w.\-]+:[0-9]+[^\s\\;|&<>]*(?<!,)"
            # A bare host (localhost, api.example.com/v1): a dot or localhost, not prose.
            r"|(?:localhost|[\w\-]+(?:\.[\w\-]+)+)(?:/[^\s\\;|&<>]*)?(?<![,.])(?![^\s;|&<>])"
            r"|\$\{?\w+\}?[^\s\\;|&<>]*(?<!,)"
            r"|[A-Z]{3,7}|\\?\"[^\"\\\n]*\\?\"|'[^'\n]*')){0,16}?[ \t]+-[A-Za-z]+u[ \t]+"
            r"(?P<cq>\\?[\"'])?(?P<combined>[^\s:\"'\\\-][^\s:\"'\\]*):)"
            # The password quoted on its own (-u admin:'…').
            r"(?(uq)|(?(pq)|(?(cq)|(?P<vq>\\?[\"'](?=[^\s\"'])(?![,}\]]*(?:$|\n|,\s*\")))?))))"
            + _NOT_A_REFERENCE
            # Not a URL (redis-cli -u redis://:pw@host: its password is a url_password),
            # nor GitHub's word for a token given as the user (TOKEN:x-oauth-basic).
            + r"(?![0-9]+\b)(?!//)(?!x-oauth-basic\b)"
            r"(?!(?:(?P=user)|(?P=joined)|(?P=combined)|(?P=proxy))(?![^\s\"']))"
            # A quoted one to its closing quote (a space inside it too).
            r"(?(uq)[^\"'\n\\]+|(?(pq)[^\"'\n\\]+|(?(cq)[^\"'\n\\]+|(?(vq)[^\"'\n\\]+"
            r"|[^\s\"'\\]+))))",
            "-u ",
            "-u=",
            "--user",
            "curl",
        ),
        keep_match=lambda match: _user_group_option(match),
    ),
    replace(
        _rule(
            "user_password",
            # -u 'user':'password', the two quoted apart (also escaped in a tool's input).
            r"(?P<head>(?<!\S)(?:-u|--user|--proxy-user)(?:[ \t]+|=)(?P<uq>\\?[\"'])"
            r"(?P<user>[^\s:\"'\\]+)(?P=uq):)(?P<q>(?P=uq))"
            + _NOT_A_REFERENCE
            + r"[^\"'\n\\]+(?P=q)",
            "-u ",
            "-u=",
            "--user",
        ),
        keep_match=lambda match: _user_group_option(match),
    ),
    _rule(
        "user_password",
        # Oracle: jdbc:oracle:thin:user/password@host, sqlplus user/password[@db].
        r"(?P<head>\bjdbc:oracle:[a-z0-9]+:@?[A-Za-z0-9_$#]+/"
        r"|\bsqlplus\b(?:[ \t]+-[A-Za-z]+)*[ \t]+(?:\\?[\"'])?[A-Za-z0-9_$#]+/)"
        + _NOT_A_REFERENCE
        + r"(?:\\?\"[^\"\n\\]+\\?\"|'[^'\n]+'|[^@\s\"'/\\]+)",
        "jdbc:oracle",
        "sqlplus",
    ),
    _rule(
        "user_password",
        # mysql -pSECRET (the password joined to -p), mysqldump and mariadb alike.
        r"(?P<head>\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)\b"
        r"[^\n|;&]{0,200}?(?<!\S)-p)"
        r"(?:(?P<q>[\"'])"
        + _NOT_A_REFERENCE
        + r"[^\"'\n]+(?P=q)|"
        + _NOT_A_REFERENCE
        + r"[^\s\"']+)",
        "mysql",
        "mariadb",
    ),
    _rule(
        "user_password",
        # A password after its option, a space between: sshpass -p, docker/oc/az login -p,
        # the mongo tools' -p, twine upload -p, smbmap/netexec -p.
        r"(?P<head>\b(?:sshpass|(?:docker|podman|nerdctl|oc|az|helm[ \t]+registry) login"
        r"|mongo(?:sh|dump|restore|export|import|stat|top|files)?|twine[ \t]+upload"
        r"|smbmap|crackmapexec|netexec|nxc)\b"
        r"[^\n|;&]{0,200}?(?<!\S)-p[ \t]+)" + _ARG_VALUE,
        "sshpass",
        " login",
        "mongo",
        "twine",
        "smbmap",
        "crackmapexec",
        "netexec",
        "nxc",
    ),
    _rule(
        "user_password",
        # sqlcmd/bcp -P, the ldap tools' -w, redis-cli -a: after a space, or joined to it
        # holding a digit or a symbol (further on the line, ``ls -al`` or ``mvn
        # -Pintegration`` is another command's flag).
        "(?P<head>"
        + _tool_flag(_ANY_GAP)
        # Not prose about the flag ("redis-cli -a to pass the password").
        + r"(?:[ \t]+(?![(`])"
        + _NOT_PROSE
        + r"|(?=[^\s\-])(?=[^\s\"']{0,128}?[0-9!@#$%^&*+=~?])))"
        + _ARG_VALUE,
        *_TOOL_FLAG_TRIGGERS,
    ),
    _rule(
        "user_password",
        # Joined, any value of four characters or more when no word of prose ("then",
        # "and", …) stands between the tool and its flag (``redis-cli -afoobared``).
        # Quoted too (``sqlcmd -P"Str0ng!Pass"``).
        "(?P<head>"
        + _tool_flag(_OWN_GAP)
        + r")(?=[^\s\-\"'][^\s\"']{3,}|\\?[\"'][^\s\"'])"
        + _ARG_VALUE,
        *_TOOL_FLAG_TRIGGERS,
    ),
    # A passphrase after its option: ssh-keygen -N / -P, zip and unzip -P, openssl's -k
    # (enc); 7-Zip's -p joined to it (-pS3cret). One rule per tool and flag: a pattern that
    # opens with its literal is looked for fast (a leading \b is not), and each rule takes
    # one flag of a command.
    *(
        _rule(
            "user_password",
            rf"(?P<head>{tool}\b(?<!\w{tool}){_ANY_GAP}(?<!\S){flag}){_NOT_PROSE}" + _ARG_VALUE,
            trigger,
        )
        for trigger, tool, flag in (
            ("ssh-keygen", "ssh-keygen", r"-N[ \t]+"),
            ("ssh-keygen", "ssh-keygen", r"-P[ \t]+"),
            ("zip", "zip", r"-P[ \t]+"),
            ("unzip", "unzip", r"-P[ \t]+"),
            ("openssl", "openssl", r"-k[ \t]+"),
            ("7z", "7z", r"-p(?=[^\s\-])"),
            ("7za", "7za", r"-p(?=[^\s\-])"),
        )
    ),
    _rule(
        "user_password",
        # keytool's -storepass, -keypass, -srcstorepass, -deststorepass (each of several).
        # Not ``-storepass:env VAR`` / ``:file PATH``: they name where the password is.
        r"(?P<head>(?<!\S)-(?:src|dest)?(?:store|key)pass(?P<indirect>:(?:env|file))?[ \t]+)"
        r"(?(indirect)(?!))" + _ARG_VALUE,
        "storepass",
        "keypass",
    ),
    _rule(
        "user_password",
        # A .pgpass line (host:port:database:user:password) where the text names the file:
        # echo "db:5432:app:bob:…" >> ~/.pgpass, a heredoc into it. Without the file's
        # name, five fields joined by colons are too often something else.
        r"(?P<head>(?:^|(?<=[\s\"'>])|(?<=\\n))"
        # A host name, an IPv4 address or * (not a time: 12:30:45).
        r"(?:[A-Za-z*][A-Za-z0-9.\-*]{0,252}|[0-9]{1,3}(?:\.[0-9]{1,3}){3}):(?:[0-9]{1,5}|\*)"
        r":[^:\s\"'\\]{1,128}:[^:\s\"'\\]{1,128}:)" + _NOT_A_REFERENCE + r"[^\s\"'\\]+",
        "pgpass",
    ),
    # smbclient -U user%password; a Redis password (redis.conf's requirepass and
    # masterauth, CONFIG SET requirepass, AUTH at redis-cli's prompt); a .netrc line
    # (machine HOST login USER password VALUE); PowerShell's ConvertTo-SecureString "…";
    # a secret set from the command line (az keyvault secret set --value, gh secret set
    # --body, aws ssm put-parameter --value, aws secretsmanager --secret-string, dotnet
    # user-secrets set KEY VALUE).
    *(
        _rule("user_password", rf"(?P<head>{head})" + _ARG_VALUE, *triggers)
        for head, triggers in (
            (
                # A domain user too (``-U 'CORP\\bob%…'``), the user joined to -U.
                r"\b(?:smbclient|rpcclient|smbget|smbmap|smbcacls)\b[^\n|;&]{0,200}?(?<!\S)"
                r"(?:-U|--user)(?:[ \t]+|=)?[\"']?[^\s%\"']+%",
                ("smbclient", "rpcclient", "smbget", "smbmap", "smbcacls"),
            ),
            (
                r"\b(?i:requirepass|masterauth)[ \t]+" + _NOT_PROSE,
                ("equirepass", "EQUIREPASS", "asterauth", "ASTERAUTH"),
            ),
            # AUTH [user] password (Redis 6 takes a user name first), at the prompt or
            # as redis-cli's command (after its options: not a key named "auth").
            (
                "(?:"
                + _REDIS_PROMPT
                + r"|\bredis-cli(?:[ \t]+(?:-[hpnsua]|--(?:user|pass|cacert|cert|key|sni|tls-ciphers"
                r"|cacertdir|hostname|port|db))[ \t]+[^\s\-]\S*|[ \t]+-{1,2}[A-Za-z0-9][\w\-]*)"
                r"{0,12}[ \t]+)(?i:auth)[ \t]+(?!\\?[\"']?(?:is|are|was|failed|required|needed"
                r"|must|should|first|then|with|to|the|a|an|and|or|for)(?![^\s\"'\\]))"
                r"(?:(?![&|;<>])[^\s\"']+[ \t]+(?=[^\s&|;<>])(?![0-9]>))?(?![&|;<>])"
                # The command ends after them (not "auth is needed when …"): the line's or
                # the string's end, a separator or a redirection (not an HTML tag, an arrow).
                r"(?=(?:'[^'\n]+'|\"[^\"\n]+\"|\\\"[^\"\\\n]+\\\"|[^\s\"']+)[ \t]*"
                r"(?:$|\r?\n|\\[rn]|&&|\|\||[;|]|[0-9]?(?:>>?|<)(?![A-Za-z/]*>)(?!-)|\\?[\"']))",
                ("> AUTH", "> auth", "redis-cli"),
            ),
            # AUTH [user] password written to Redis by echo or printf (piped to redis-cli
            # or nc): the string ends after it, or a \r\n sends the next command.
            (
                r"\b(?:echo|printf)[ \t]+(?:-[neE]{1,3}[ \t]+)?\\?[\"'](?i:auth)[ \t]+"
                r"(?!(?:is|are|was|failed|required|needed|must|should|first|then|with|to|the|a"
                r"|an|and|or|for)(?![^\s\"'\\]))"
                r"(?:[^\s\"'\\]+[ \t]+(?=[^\s\"'\\]+(?:\\{1,2}[rn]|\\?[\"'])))?"
                r"(?=[^\s\"'\\]+(?:\\{1,2}[rn]|\\?[\"']))",
                ("AUTH", "auth"),
            ),
            # ldappasswd -s: the new password (its -w, the bind password, is a tool flag).
            (
                r"\bldappasswd\b[^\n|;&]{0,200}?(?<!\S)-s(?:[ \t]+(?![(`])"
                + _NOT_PROSE
                + r"|(?=[A-Za-z0-9!@#$%^&*+=~?]|\\?[\"'][^\s\"']))",
                ("ldappasswd",),
            ),
            # httpie and xh: -a / --auth user:password; lftp -u user,password.
            (
                r"(?:^|(?<=[;|&(`\"'\n])|(?<=\\[nrt])|(?<=\$ ))[ \t]*"
                # What runs a command (sudo, uv run, VAR=value, a Dockerfile's RUN, a CI
                # step's run:) or a prompt before it.
                r"(?:(?:sudo(?:[ \t]+-[A-Za-z]{1,3})*|time|nohup|exec|env|command|watch|RUN"
                r"|[Rr]un:|-[ \t]+run:"
                r"|(?:uv|poetry|pipx|pdm|hatch)[ \t]+run|-n[ \t]+[0-9.]+"
                r"|[A-Za-z_][A-Za-z0-9_]{0,63}=[^\s;|&\\()'\"`]{0,256}|[>%#]|PS[ \t][^>\n]{0,60}>)"
                r"[ \t]+){0,4}"
                r"(?:http|https|xh|xhs|python[0-9.]*[ \t]+-m[ \t]+httpie)[ \t]"
                + _OWN_GAP
                + r"(?<!\S)(?:-a|--auth)(?:[ \t]+|=)(?:\\?[\"'])?[^\s:\"'\\]+:(?!/)",
                ("http ", "https ", "xh ", "xhs ", "http\t", "https\t", "xh\t", "xhs\t", "httpie"),
            ),
            (
                r"\blftp\b[^\n|;&]{0,200}?(?<!\S)(?:-u|--user)[ \t]+(?:\\?[\"'])?"
                r"[^\s,\"'\\]+,",
                ("lftp",),
            ),
            (
                r"\b(?:machine[ \t]+\S+(?:[ \t]+login[ \t]+\S+)?|default[ \t]+login[ \t]+\S+)"
                r"[ \t]+password[ \t]+",
                ("machine", "default login"),
            ),
            (
                r"\bConvertTo-SecureString(?:[ \t]+-(?:AsPlainText|Force|String))*[ \t]+(?=[\"'])"
                r"|\bConvertTo-SecureString(?:[ \t]+-(?:AsPlainText|Force))*[ \t]+-String[ \t]+(?!\()",
                ("ConvertTo-SecureString",),
            ),
            (
                r"\b(?:az[ \t]+keyvault[ \t]+secret[ \t]+set|gh[ \t]+secret[ \t]+set"
                r"|aws[ \t]+ssm[ \t]+put-parameter|aws[ \t]+secretsmanager[ \t]+"
                r"(?:create-secret|put-secret-value|update-secret))\b[^\n|;&]{0,300}?(?<!\S)"
                r"(?:--value|--body|-b|--secret-string)(?:[ \t]+|=)",
                ("keyvault", "secret set", "put-parameter", "secretsmanager"),
            ),
            (
                r"\bdotnet[ \t]+user-secrets[ \t]+set[ \t]+"
                r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)[ \t]+",
                ("user-secrets",),
            ),
        )
    ),
    _rule(
        "user_password",
        # --password VALUE, --api-key VALUE, --github-token VALUE (a --password=VALUE is a
        # config_secret); not a help text's metavar (--password TEXT, --token <token>).
        # (The pattern opens with its literal "--", which the engine looks for fast.)
        # One space before the value (a help text's columns have more), and a value with a
        # digit or a symbol ("--token string", "--password Password to use" are help).
        # Not datasette's --plugin-secret PLUGIN KEY VALUE (its value is third: below),
        # nor docker's --secret id=…,src=… (where the secret is, not what it is).
        r"(?P<head>--(?<!\S--)(?!plugin-secret)[a-z0-9\-]{0,30}?(?:password|passwd|(?<=-)pass|token|secret"
        r"|api-?key|access-key|secret-key)(?:[ \t]|=(?=[\"'])|=(?=[0-9]{6,}(?![^\s\"']))))"
        r"(?:(?P<q>[\"'])" + _NOT_A_REFERENCE + r"[^\"'\n]{4,}(?P=q)"
        r"|(?![\-$*{<\[])(?!%[A-Za-z_]\w*%)(?![0-9]+\b)(?!(?:id|src|source|type|env)=)"
        r"(?=[^\s\"']*[0-9!@#%^&*+/=~])[^\s\"']{4,}"
        # A PIN-like password of digits only (not a token's count: --max-token 4096).
        r"|(?:(?<=password[ \t=])|(?<=passwd[ \t=])|(?<=-pass[ \t=]))[0-9]{6,}(?![^\s\"']))",
        "--",
    ),
    _rule(
        "user_password",
        # datasette publish … --plugin-secret PLUGIN KEY VALUE.
        r"(?P<head>--plugin-secret[ \t]+[^\s\"']+[ \t]+[^\s\"']+[ \t]+)"
        r"(?:(?P<q>[\"'])" + _NOT_A_REFERENCE + r"[^\"'\n]+(?P=q)"
        r"|(?![\-|&;<>])" + _NOT_A_REFERENCE + r"[^\s\"']+)",
        "--plugin-secret",
    ),
    _rule(
        "user_password",
        # Said in words: "my admin password is MyDogRex2019", "the password for the NAS
        # (db01.prod) was Tr0ub4dor&3", "password is: …", "my password's …". A value with
        # a letter and a digit or a symbol, of 6 characters or more, so that prose ("the
        # password is stored in the vault", "is correct") stays; a quoted one of any
        # letters. Not a scheme that says how a password is kept ("SHA-256 hashed",
        # "base64-encoded", "argon2id", "2FA-protected").
        r"(?P<head>\b(?i:password|passwd|passphrase|passcode)(?:[ \t]+(?i:for|of|to|on)"
        r"[ \t][^\n;:!?]{1,40}?)?"
        # "the password (that) you need is …", "the password we use was …"
        r"(?:[ \t]+(?i:that[ \t]+|which[ \t]+)?(?i:you|we|i|they)(?:'ll)?[ \t]+[a-z]{2,12}"
        r"(?:[ \t]+(?i:you|me|us|them|him|her))?"
        r"(?:[ \t]+(?:to|for|on|with|in|over|back)(?:[ \t]+[a-z]{2,12})?)?)?"
        r"(?:[ \t]+(?i:is|was|is now):?|'s)[ \t]+)"
        r"(?:(?P<q>[\"'`])" + _NOT_A_REFERENCE + r"[^\"'`\n\\]{6,128}(?P=q)"
        r"|(?![\-$*{<\[%])(?![0-9]+\b)(?!" + _KEPT_HOW + r")"
        # An opening bracket inside it is part of it (Kx7(mP2qLw9), not a closing one.
        r"(?=[^\s\"'`>)}\],;\\]*[A-Za-z])(?=[^\s\"'`>)}\],;\\]*[0-9!@#%^&*+=~])"
        r"[^\s\"'`<>(){}\[\],;\\][^\s\"'`>)}\],;\\]{4,126}[^\s\"'`<>(){}\[\],;\\.!?:]"
        r"(?=[.!?:]*(?:[\s\"'`<>(){}\[\],;\\]|$))"  # the whole word, its end's stop left
        r"(?![ \t]+(?i:hashed|encrypted|encoded|salted|stored|derived|protected|based|"
        r"generated|rotated|compliant|only)\b))",
        "assword",
        "ASSWORD",
        "asswd",
        "assphrase",
        "ASSPHRASE",
        "asscode",
    ),
    replace(
        _rule(
            "user_password",
            # Named with no verb between ("the password PgKtjz4IJWUaxP9x is exposed", an agent
            # repeating a value it found): a value that reads as made, not as a word or a
            # scheme (``argon2id``, ``SHA256``) or an identifier (``OAuth2Client``,
            # ``PBKDF2WithHmacSHA256``: a run of letters reads as a word, ``_names_a_thing``):
            # 8 characters or more holding an upper-case letter, a lower-case letter and a
            # digit, a quoted one too.
            r"(?P<head>\b(?i:password|passwd|passphrase)[ \t]+)(?P<q>[\"'`])?"
            r"(?=[^\s\"'`<>(){}\[\],;\\]*[A-Z])(?=[^\s\"'`<>(){}\[\],;\\]*[a-z])"
            r"(?=[^\s\"'`<>(){}\[\],;\\]*[0-9])"
            r"[^\s\"'`<>(){}\[\],;\\]{7,127}[^\s\"'`<>(){}\[\],;\\.!?:]"
            r"(?(q)(?P=q)|(?=[.!?:]*(?:[\s\"'`<>(){}\[\],;\\]|$)))",
            "assword",
            "ASSWORD",
            "asswd",
            "assphrase",
            "ASSPHRASE",
        ),
        keep=_names_a_thing,
    ),
    replace(
        _rule(
            "config_secret",
            # An API key or token said in words: "my API key is 9f8e7d6c…", "Use this access
            # token: Ab3dEf6h…": 16 characters or more with a letter and a digit, not an
            # identifier (a run of its letters reads as a word).
            r"(?P<head>\b(?i:api|access|secret|auth)[ \t]+(?i:key|token)"
            r"(?:[ \t]+(?i:is|was)[ \t]*:?|[ \t]*:)[ \t]+)(?P<q>[\"'`])?"
            r"(?=[A-Za-z0-9_\-./+=]*[0-9])(?=[A-Za-z0-9_\-./+=]*[A-Za-z])[A-Za-z0-9_\-./+=]{16,}"
            r"(?(q)(?P=q)|(?![A-Za-z0-9_\-./+=]))",
            # As prose writes them (one substring search each, on every event).
            "API key",
            "API Key",
            "api key",
            "API token",
            "access key",
            "Access key",
            "access token",
            "Access token",
            "secret key",
            "Secret key",
            "auth token",
            "Auth token",
        ),
        # A key said in words is seldom an identifier: random keys hold words by chance.
        keep=None,
    ),
    *(
        _rule(
            "user_password",
            # htpasswd -b[c] FILE USER PASSWORD, htpasswd -nb USER PASSWORD: up to four
            # options (``-C 10`` with its cost), one holding "b", then the file unless one
            # holds "n". The options are taken whole and the arguments counted, never tried
            # another way: a password given as $VAR let the user name be taken for it.
            r"(?P<head>\bhtpasswd"
            rf"(?=(?:{_HTPASSWD_OPTION}){{0,5}}[ \t]+-[A-Za-z]*b)"
            + (
                rf"(?=(?:{_HTPASSWD_OPTION}){{0,5}}[ \t]+-[A-Za-z]*n)"
                if names_file_not
                else rf"(?!(?:{_HTPASSWD_OPTION}){{0,5}}[ \t]+-[A-Za-z]*n)"
            )
            + rf"(?>(?:{_HTPASSWD_OPTION}){{1,6}})"
            + r"(?:[ \t]+(?![-|&;<>])\S+)" * (1 if names_file_not else 2)
            + r"[ \t]+)"
            r"(?:(?P<q>[\"'])" + _NOT_A_REFERENCE + r"[^\"'\n]+(?P=q)"
            r"|(?![|&;<>\-])" + _NOT_A_REFERENCE + r"[^\s\"';|&]{4,})",
            "htpasswd",
        )
        for names_file_not in (True, False)
    ),
    _rule(
        "user_password",
        # Windows: net use [Z:] \\server\share PASSWORD [/user:NAME], net use … /user:NAME
        # PASSWORD, net user NAME PASSWORD /add (a "*" asks for it). After "net user NAME"
        # a value with a digit or a symbol, or one an option follows ("the net user
        # command lists users" is prose).
        r"(?P<head>\b(?:net|NET|Net)[ \t]+(?:(?:use|USE)(?:[ \t]+[A-Za-z]:)?[ \t]+\\\\\S+"
        r"(?:[ \t]+/(?i:user|u):\S+)?[ \t]+"
        r"|(?:user|USER)[ \t]+(?![/\-])[^\s/]+[ \t]+"
        r"(?=[^\s\"']*[0-9!@#$%^&*+=~]|[\"']|[^\s\"']+[ \t]+/)))"
        r"(?:(?P<q>[\"'])" + _NOT_A_REFERENCE + r"[^\"'\n]+(?P=q)"
        r"|(?![/*\-|&;<>%])(?![^\s]*[<>|&])" + _NOT_A_REFERENCE + r"[^\s\"']+)",
        "et use",
        "ET USE",
        "ET use",
        "et USE",
    ),
    _rule(
        "user_password",
        # A query string's password: ?user=admin&pwd=letmein.
        # Not a flag's word (?pass=false) or a path (a file manager's ?pwd=/home/x).
        r"(?P<head>[?&](?i:pwd|pw|pass|passwd|password|passphrase)=)"
        + _NOT_A_REFERENCE
        + r"(?!(?i:true|false|null|none|undefined)(?![^&#\s\"'<>\\.,;:!?)\]]))(?![/~])"
        # Not the prose's stop after it ("?pwd=true.", "(?pass=x1y2z3)").
        r"[^&#\s\"'<>\\]{2,255}[^&#\s\"'<>\\.,;:!?)\]]",
        "&p",
        "?p",
        "&P",
        "?P",
    ),
    _rule(
        "basic_auth",
        # Credentials are base64: a digit, a symbol or a capital inside ("Basic
        # Authentication" is prose).
        r"(?P<head>(?i:authorization)\W{0,4}(?i:basic)\s+)"
        r"(?=[A-Za-z0-9+/]*(?:[0-9+/=]|[a-z][A-Z]))[A-Za-z0-9+/]{8,}={0,2}(?![A-Za-z0-9+/=])",
        "Basic",
        "basic",
        "BASIC",
    ),
    _rule(
        "url_password",
        # The password runs to the last @ before the host (``user:p@ss@host``).
        # A scheme is short: unbounded, it was scanned from every word of a long run of
        # "a-a-a…" before a "://" (quadratic).
        r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s:/@\"'<>\\]{0,256}:)"
        + _NOT_A_REFERENCE
        # Not an image's tag before its digest (docker://alpine:3.19@sha256:…).
        + r"(?![^\s/\"'<>\\@]*@sha(?:256|512):)"
        r"[^\s/\"'<>\\]+(?=@[A-Za-z0-9\[][^\s@/\"'<>\\]*(?:[/?#\s\"'<>\\]|$))",
        "://",
    ),
    _rule(
        "config_secret",
        # An XML element holding a secret (Maven's settings.xml, .NET configs).
        r"(?P<head><(?P<tag>[A-Za-z_\-]{0,32}?(?i:password|passwd|passphrase|secret|token"
        r"|api[_-]?key))>\s{0,80})"
        + _NOT_A_REFERENCE
        + r"[^<\s](?:[^<\n]{0,254}[^<\s])??(?=\s{0,80}</(?P=tag)>)",
        "</",
    ),
    _rule(
        "config_secret",
        # .NET's appSettings: <add key="ApiKey" value="…" />.
        r"(?P<head><add\s+key=\"[^\"]{0,64}?(?i:password|passwd|secret|token|api[_-]?key)\"\s+"
        r"value=)(?P<q>\")" + _NOT_A_REFERENCE + r"[^\"\n]{1,256}(?P=q)",
        "<add ",
    ),
    _rule(
        "config_secret",
        # The same, the value first: <add value="…" key="ApiKey" />.
        r"(?P<head><add\s+value=)(?P<q>\")" + _NOT_A_REFERENCE + r"[^\"\n]{1,256}(?P=q)"
        r"(?=\s+key=\"[^\"]{0,64}?(?i:password|passwd|secret|token|api[_-]?key)\")",
        "<add ",
    ),
    _rule(
        "config_secret",
        # A Terraform variable named for a secret, its default lines below its name:
        # variable "db_password" { type = string  default = "…" }.
        r"(?P<head>\bvariable[ \t]+\\?\"[A-Za-z0-9_\-]{0,64}?"
        # The name ends in the secret's word (not secret_name, token_ttl).
        r"(?i:password|passwd|secret|token|(?<=[_\-\"])pass|(?<=[_\-\"])pwd"
        r"|(?:api|private|secret|access|auth|account)_?key)"
        r"\\?\"[ \t]*\{"
        # Blocks inside it first, two deep (validation { condition = can(regex("{12,}")) }),
        # JSON-escaped text too.
        r"(?:[^{}]|\{(?:[^{}]|\{[^{}]{0,200}\}){0,400}\}){0,600}?"
        r"\bdefault[ \t]*=[ \t]*)(?P<q>\\?\")"
        + _NOT_A_VALUE
        # Past an escaped quote ("Sup3r\"S3cret"); not a placeholder (REPLACE_ME), a
        # setting ("disabled"), a path (/run/secrets/db, certs/client.key) or an ARN.
        + r"(?!(?i:change_?me|replace_?me|todo|fixme|placeholder|changeit"
        r"|(?:please_)?(?:set|change|replace|fill|enter|update)"
        r"(?:_(?:me|it|here|this|value|later|your|the|a|an|real|actual|password|secret|token"
        r"|key|in|at|on|by|before|prod|production|deploy|now|via|env|environment|tfvars|vars"
        r"|variable|up|out|asap|use|runtime|externally|manually|first|ci|pipeline|vault|from|with"
        r"|please|elsewhere)){0,3})"
        r"\\?\")"
        r"(?!(?:enabled|disabled|none|null|true|false|auto|generated|random|healthy)\\?\")"
        r"(?!(?:\.{0,2}|~)/[\w.\-/]*\\?\"|[\w.\-/]*/[\w\-]+\.[a-z]{1,5}\\?\")"
        r"(?!arn:aws[\w\-]*:[\w\-]+:)" + rf"{_QUOTED}{{6,256}}(?P=q)",
        "variable",
    ),
    replace(
        _rule(
            "env_secret",
            # An environment list's entry: Kubernetes' "- name: DB_PASSWORD / value: …",
            # an ECS task's {"name": "DB_PASSWORD", "value": "…"} (pretty-printed or
            # JSON-escaped too), CloudFormation's Name / Value, Terraform's name = "…".
            rf"(?P<head>\b(?i:name)\\?[\"']?[ \t]*[:=][ \t]*(?P<nq>\\?[\"']?){_ENV_NAME_END}(?P=nq)"
            r"[ \t]*,?(?:[ \t]|\r?\n|\\[rn]){0,40}\\?[\"']?(?i:value)\\?[\"']?[ \t]*(?:(?P<eq>=)|:)"
            rf"[ \t]*)(?P<q>\\?[\"'])?{_NOT_A_VALUE}{_SETTING_WORD}(?!arn:aws)"
            # Unquoted after "=" (Terraform): an expression (random_password.api.result).
            rf"(?(q){_QUOTED}{{6,256}}(?P=q)|(?(eq)(?!)|{_BARE}{{6,256}}(?![^\s,}}\]\\\"'])))",
            "name",
            "Name",
        ),
        # A hint or a description in words ("Must be at least 8 characters") is no secret.
        keep=lambda value: _reads_as_a_label(value),
    ),
    _rule(
        "env_secret",
        # A Dockerfile's ENV NAME value (its older form, no "=").
        # Indented too (a Dockerfile in a list, or a heredoc).
        rf"(?P<head>(?:^|(?<=\n)|(?<=\\n)|(?<=\"))(?:[ \t]|\\t){{0,16}}ENV[ \t]+{_ENV_NAME_END}[ \t]+)"
        r"(?P<q>\\?[\"'])?"
        + _NOT_A_VALUE
        + _SETTING_WORD
        # One word to the line's end (prose after ENV NAME is no value), or to a comment or
        # a line continuation ending it.
        + rf"(?(q){_QUOTED}{{6,256}}(?P=q)|{_BARE}{{6,256}}"
        r"(?=[ \t]*(?:\#[^\n\\\"]{0,200}|\\{1,2}[ \t]*)?(?:\r?\n|\\[rn]|\\?\"|$)))",
        "ENV ",
    ),
    _rule(
        "user_password",
        # curl in an exec-form list: command: ["curl", "-u", "user:password", …], a
        # health check's ["CMD", "curl", …].
        r"(?P<head>\bcurl(?P<aq>\\?[\"'])(?:[ \t]*,[ \t]*(?P=aq)[^\"'\\\n]{0,100}(?P=aq)){0,20}?"
        r"[ \t]*,[ \t]*(?P=aq)(?:-u|--user|--proxy-user|-U)(?P=aq)[ \t]*,[ \t]*(?P=aq)"
        r"[^\s:\"'\\]+:)" + _NOT_A_REFERENCE + r"(?![0-9]+\\?[\"'])[^\"'\n\\]+",
        "curl",
    ),
)
# A bare value that is a call or an index (``get_secret()``, ``os.environ.get(``,
# ``keys[0]``), not a secret holding a bracket (``Kx7(mP2qLw9``).
_NOT_A_CALL = r"(?![A-Za-z_][\w.]{0,128}[(\[](?:[^\s\"'`\\)\]]{0,256}[)\]])?[,;]?(?:[\s\"'`\\]|$))"
_ENV_RULE = _rule(
    "env_secret",
    rf"(?P<head>{_ENV_NAME}(?:=|\s*[:=]\s*(?=[\"'])))"
    rf"(?:(?P<q>[\"']){_NOT_A_VALUE}{_BARE}{{6,}}(?P=q)(?![(\[.\w])"
    # Unquoted (a .env file, a shell line): its symbols too, to the end of the word (see
    # _GLUED_TAIL).
    rf"|{_NOT_A_VALUE}{_NOT_A_CALL}(?:{_BARE}{{6,}}|{_BARE}{{3,5}}(?=[&(\[{{<;](?![\w.\-]*=)"
    r"[^\s\"'`\\,;)\]}>]{3}))(?![.\w]))",
)
# What a bare value glued to a symbol holds after it (``Tr0ub4dor&3xyz``, ``Kx7(mP2q``,
# ``s3cr3t;rm``): a .env file or a config value holds it whole, and a value cut short there
# leaked the rest. To the end of the word, less the punctuation that closes a structure.
# Not a query string's or a connection string's next field (``&x=1``, ``;Database=x``).
_GLUED_TAIL = re.compile(
    r"[&(\[{<;](?![\w.\-]*=)(?=[^\s\"'`\\,;)\]}>])"
    r"[^\s\"'`\\]*?(?=[,;)\]}>]*(?:[\s\"'`\\]|$))"
)
# A label or a message in words, not a secret: "Forgot password?", "Mot de passe",
# "Password must be at least 8 characters" (two words or more of letters, or numbers
# alone, opening with a capital or ending with a stop).
_LABEL = re.compile(
    r"(?=[^\W\d_])(?:[^\W\d_]+(?:['’][^\W\d_]+)?|\d+)(?:[ \t]+(?:[^\W\d_]+(?:['’][^\W\d_]+)?|\d+))+"
    r"[.?!:…]?"
)


def _reads_as_a_label(value: str) -> bool:
    """Whether ``value`` reads as words a user is shown rather than a secret."""
    return _LABEL.fullmatch(value) is not None and (value[0].isupper() or value[-1] in ".?!:…")


def _config_rule(name: str, keep: Callable[[str], bool] | None) -> _Rule:
    return replace(
        _rule(
            "config_secret",
            # The name, quoted or not (a dict's ["KEY"] too); ``=``, ``:``, ``:=`` or ``=>``;
            # a quoted value (spaces allowed) or a bare one.
            rf"(?!NOPASSWD:)(?P<head>(?P<kq>\\?[\"'])?{name}(?![A-Za-z0-9_])(?(kq)\\?[\"']\]?)"
            r"\s*(?::=|=>|[:=])\s*)"
            rf"(?P<q>\\?[\"'])?{_NOT_A_VALUE}"
            rf"(?(q){_QUOTED}{{6,}}(?P=q)"
            rf"|(?={_BARE}{{0,255}}[0-9!@#%^&*+/=~$]){_BARE}{{6,256}}+{_BARE_END})",
        ),
        keep=keep,
    )


# A passphrase is words: no label check for it.
_PASSPHRASE_RULE = _config_rule(r"[A-Za-z0-9_\-]{0,64}?(?i:passphrase)", None)
_CONFIG_RULE = _config_rule(_CONFIG_NAME, _reads_as_a_label)
# A secret word with a stage after it, any case: API_KEY_V2: …, db_password_prod = … (the
# short words, pass and pwd, name other things too: their own rule takes them).
_STAGED_CONFIG_RULE = _config_rule(
    rf"(?i:(?:[A-Z][A-Z0-9_]{{0,63}}?)?(?:{_LONG_SECRET_WORDS}){_NAME_END})", _reads_as_a_label
)
_SHORT_NAME_RULE = _rule(
    "config_secret",
    # ``pass = "Xk9mQ2vLp7"``, ``mysql_pwd: s3cret!``: these names also name other things
    # (a compiler's ``first_pass = "optimize"``, the shell's ``PWD=/home/x``), so the value,
    # quoted or not, must hold a digit or a symbol and not be a path.
    rf"(?P<head>(?P<kq>\\?[\"'])?"
    # A compiler's or a renderer's pass (``first_pass``, ``render_pass``), not a password.
    r"(?!(?i:first|second|third|final|last|next|prev|previous|multi|single|one|two|render"
    r"|shader|compiler?|optimi[sz]ation|optimi[sz]er?|lint)[_\-]pass(?![A-Za-z0-9_]))"
    rf"{_SHORT_NAME}(?![A-Za-z0-9_])(?(kq)\\?[\"']\]?)"
    r"\s*(?::=|=>|[:=])\s*)"
    rf"(?P<q>\\?[\"'])?{_NOT_A_VALUE}(?![/~.])"
    rf"(?(q)(?=[^\"'\n]{{0,255}}[0-9!@#%^&*+=~$]){_QUOTED}{{6,}}(?P=q)"
    rf"|(?={_BARE}{{0,255}}[0-9!@#%^&*+=~$]){_BARE}{{6,256}}+{_BARE_END})",
)
_CONNECTION_RULE = _rule(
    "config_secret",
    # A connection string's password (``Server=db;Uid=sa;Pwd=letmein;``): any value,
    # since the ``;`` after it says it is one; not a path (``PWD=/home/x; ls``).
    # Written as connection strings are: no spaces around "=", a value of no call or
    # bracket, and another ``key=value`` pair before or after it (``pwd = process.cwd();``
    # is code).
    rf"(?P<head>(?:(?<=;)|(?<=;\s)|(?<=[\"'])|(?<=^))(?i:pwd|password|passwd)=)"
    rf"{_NOT_A_VALUE}(?![/~.])[^;\s\"'(){{}}\[\]]{{1,128}}"
    # Another pair, a quote, the text's end, or a ``;`` ending its line (a tool's output
    # goes on below; without the ``;``, ``PWD=C:\\work`` of ``env`` is no password).
    r"(?=;\s?[A-Za-z ]+=|;?[\"']|;?$|;\r?\n)",
)
_ASSIGNMENT_RULES = (
    _ENV_RULE,
    _PASSPHRASE_RULE,
    _CONFIG_RULE,
    _STAGED_CONFIG_RULE,
    _SHORT_NAME_RULE,
    _CONNECTION_RULE,
)
_KINDS = tuple(dict.fromkeys(rule.kind for rule in (*_KEY_RULES, *_ASSIGNMENT_RULES)))

# Where an assignment may start: a secret word (lower case, in the lowered text) followed,
# after the rest of its name and an optional closing quote, by ``:`` or ``=``.
_NAME_WORDS = (
    "pass",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "accesskey",
    "access_key",
    "privatekey",
    "private_key",
    "authkey",
    "auth_key",
    "api-key",
    "access-key",
    "private-key",
    "auth-key",
    "appkey",
    "app_key",
    "app-key",
    "applicationkey",
    "application_key",
    "application-key",
    "rediscli_auth",
    "master_key",
    "encryption_key",
    "signing_key",
)
# A secret's name is at most this long: bounds each look at a candidate (a text of one
# run of name characters, "tokentoken…", was scanned from every hit: quadratic).
_MAX_NAME = 64
_ASSIGNED = {
    word: re.compile(re.escape(word) + rf"[a-z0-9_\-]{{0,{_MAX_NAME}}}\\?[\"']?\]?\s*[:=]")
    for word in _NAME_WORDS
}
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


# Placeholders in examples and docs: ``********``, ``sk-ant-...``, ``xxxxxx``, ``<token>``.
_PLACEHOLDER = re.compile(
    r"(?:[a-z]{1,4}[-_](?:[a-z]{1,5}[-_])?)?[*•xX.\-_#]{3,}|.{0,12}(?:\.\.\.|…)|(?:\.\.\.|…).*"
    r"|<[^<>]*>|(?i:.*\byour[-_ ].*)"
    # A name for the value, not one: RANDOM_PASSWORD, MY-PERSONAL-ACCESS-TOKEN, api-key.
    r"|(?i:(?:[a-z]+[-_])*(?:password|passwd|token|secret|key|apikey)(?:[-_][a-z]+)*)"
    # A tokenizer's encoding, named by a "token" setting: cl100k_base, o200k_base.
    r"|(?:cl100k|o200k|p50k|r50k)_(?:base|edit|harmony)"
)


def _replacement(match: re.Match[str], rule: _Rule, counts: Counter[str] | None) -> str:
    """The match with its value replaced, or as it is when the value is a placeholder (or
    one the rule's ``keep`` or ``keep_match`` leaves)."""
    kind, keep = rule.kind, rule.keep
    if rule.keep_match is not None and rule.keep_match(match):
        return match.group(0)
    groups = match.groupdict()
    head, quote = groups.get("head") or "", groups.get("q") or ""
    value = match.group(0)[len(head) + len(quote) : len(match.group(0)) - len(quote)]
    if _PLACEHOLDER.fullmatch(value) or (keep is not None and keep(value)):
        return match.group(0)
    if counts is not None:
        counts[kind] += 1
    return f"{head}{quote}[REDACTED:{kind}]{quote}"


def _after_escape(text: str, at: int) -> bool:
    """Whether ``text[at]`` follows a JSON escape's letter (``\\n``, ``\\t``, ``\\r``)."""
    return at >= 2 and text[at - 1] in "nrt" and text[at - 2] == "\\"


def _name_starts(text: str) -> list[int]:
    """Where a name that may be assigned a secret starts: the name, and a quote before it."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer: look everywhere
        return list(range(len(text)))
    starts: set[int] = set()
    for word in _NAME_WORDS:
        if word not in lowered:
            continue
        for hit in _ASSIGNED[word].finditer(lowered):
            start = hit.start()
            while (
                start > 0
                and text[start - 1] in _NAME_CHARS
                and not _after_escape(text, start)
                and hit.start() - start < _MAX_NAME
            ):
                start -= 1
            starts.add(start)
            if start > 0 and text[start - 1] in "\"'":  # a quoted key: "apiKey": "…"
                start -= 1
                if start > 0 and text[start - 1] == "\\":
                    start -= 1
                starts.add(start)
    return sorted(starts)


# A line of a .env file: NAME=value (``export`` before it, as shells read such files).
_DOTENV_LINE = re.compile(r"(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*=[^\s=]")
# The words left of an unquoted value with spaces: no shell operator, no option, no path.
# A comment may end the line (``# the old one``).
_MORE_WORDS = re.compile(
    r"(?P<words>(?:[ \t]+[^\s|&;<>$`#\\/=\-][^\s|&;<>$`\\/=]*)+)"
    r"(?:[ \t]+#[^\n]*?)?[ \t]*(?=\n|\\n|$)"
)


def _dotenv_value_end(text: str, start: int, end: int) -> int:
    """Where the unquoted value of an assignment at ``start`` (its first word redacted up
    to ``end``) ends: the end of its line when the line is one of a .env file's (another
    ``NAME=value`` line right before or after it) and the rest of it is plain words
    (``PASSWORD=correct horse battery staple`` kept all but its first word); else
    ``end``. A shell line (``API_KEY=x npm start``) stands alone, or holds an operator."""
    # Looked for in the 1,000 characters before (a scan to the text's start for each of
    # many assignments was quadratic).
    window = max(0, start - 1000)
    escaped = text.rfind("\\n", window, start)
    newline = text.rfind("\n", window, start)
    line_start = max(newline + 1 if newline >= 0 else window, escaped + 2 if escaped >= 0 else 0)
    if text[line_start:start].strip(" \t") not in ("", "export"):
        return end
    words = _MORE_WORDS.match(text, end)
    if words is None:
        return end
    after = words.end("words")
    before = _LINE_BREAK.split(text[max(0, line_start - 400) : line_start])
    previous = before[-2] if len(before) > 1 else ""
    following = _LINE_BREAK.split(text[after : after + 400], maxsplit=2)
    next_line = following[1] if len(following) > 1 else ""
    if _DOTENV_LINE.match(previous) or _DOTENV_LINE.match(next_line):
        return after
    return end


_LINE_BREAK = re.compile(r"\n|\\n")


def _redact_assignments(text: str, counts: Counter[str] | None) -> str:
    pieces: list[str] = []
    done = 0
    for start in _name_starts(text):
        if start < done or (
            start > 0 and text[start - 1] in _NAME_CHARS and not _after_escape(text, start)
        ):
            continue
        for rule in _ASSIGNMENT_RULES:
            match = rule.pattern.match(text, start)
            if match is not None:
                pieces += [text[done:start], _replacement(match, rule, counts)]
                done = match.end()
                redacted = pieces[-1] != match.group(0)  # not kept as it was
                if rule.kind == "config_secret" and not match.groupdict().get("q"):
                    tail = _BARE_RUN.match(text, done).end()  # a value past the bound
                    if tail > done and redacted:
                        done = tail
                if (
                    rule.kind in ("config_secret", "env_secret")
                    and redacted
                    and not match.groupdict().get("q")
                    and (glued := _GLUED_TAIL.match(text, done)) is not None
                ):
                    done = glued.end()
                if rule.kind == "env_secret" and redacted and not match.groupdict().get("q"):
                    done = _dotenv_value_end(text, start, done)
                break
    return "".join(pieces) + text[done:] if pieces else text


# A quote escaped twice: in a JSON text, a string value holding an escaped quote (a shell
# command's curl -d "{\"password\": …}", JSON quoted in code).
_TWICE_ESCAPED_QUOTE = '\\\\\\"'


def _compact_json(node: Any) -> str:
    return orjson.dumps(node).decode()


def _spaced_json(node: Any) -> str:
    return json.dumps(node, ensure_ascii=False)


_JSON_WRITERS = (_compact_json, _spaced_json)


def _redact_json_values(text: str, counts: Counter[str] | None) -> str:
    """``text`` with each string value redacted on its own, when it is a JSON document
    written compactly (a tool's input, as transcripts are stored) or with Python's spaces,
    holding a quote escaped twice: the rules read such a value's quotes escaped once, as
    they are in it, not twice, as they are in the text. Any other text is returned as it
    is."""
    if text[:1] not in "{[" or _TWICE_ESCAPED_QUOTE not in text:
        return text
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    # Written back only as it was written: compactly, or with Python's spaces.
    dump = next((dump for dump in _JSON_WRITERS if dump(document) == text), None)
    if dump is None:
        return text
    changed = False

    def values(node: Any) -> Any:
        nonlocal changed
        if isinstance(node, str):
            if '"' not in node:  # no quote escaped twice in it
                return node
            redacted = _redact(node, counts)
            changed = changed or redacted != node
            return redacted
        if isinstance(node, list):
            return [values(item) for item in node]
        if isinstance(node, dict):
            return {key: values(item) for key, item in node.items()}
        return node

    redacted = values(document)
    return dump(redacted) if changed else text


# A pass that replaced a secret runs again on its output: a secret glued to the one before
# it (``AIza…AKIA…``) is one only once the first is a placeholder (a word starts there), so
# a chain of glued secrets takes a pass each.
_MAX_PASSES = 64


def _redact(text: str, counts: Counter[str] | None) -> str:
    if not isinstance(text, str):
        raise TypeError(f"redact() expects str, got {type(text).__name__}")
    for _ in range(_MAX_PASSES):
        done = _one_pass(text, counts)
        if done is text or done == text:
            return text
        text = done
    return text


def _one_pass(text: str, counts: Counter[str] | None) -> str:
    for rule in _KEY_RULES:
        if any(trigger in text for trigger in rule.triggers):
            text = rule.pattern.sub(lambda m, rule=rule: _replacement(m, rule, counts), text)
    return _redact_json_values(_redact_assignments(text, counts), counts)


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``; a text
    holding none is returned as it is (the same object)."""
    return _redact(text, None)


def redact_counts(text: str) -> tuple[str, Counter[str]]:
    """Like :func:`redact`, also returning how many secrets of each kind were replaced."""
    counts: Counter[str] = Counter()
    return _redact(text, counts), counts


SECRET_KINDS: tuple[str, ...] = _KINDS

# The rules' version: a digest of this module's source. Text redacted by the same rules is
# not redacted again (redaction leaves its own output as it is: a re-read transcript's
# events whose text is already stored as it stands need no second pass).
RULES_VERSION: str = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
