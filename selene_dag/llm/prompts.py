"""Versioned prompt templates shipped in ``assets/prompts/<name>.md``.

A template file starts with a line ``version: N``, then the prompt text with ``{{name}}``
placeholders. Substitution is a single pass over the template, so braces or ``{{...}}`` inside
the inserted values (code, JSON) are never interpreted.

``prompt_hash(*names)`` gives a short stable hash of the named templates for a Dagster asset's
``code_version``: editing a template changes the hash of exactly the assets that name it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache

from selene_dag.paths import assets_dir

_PLACEHOLDER = re.compile(r"\{\{([a-z_][a-z0-9_]*)\}\}")
_VERSION_LINE = re.compile(r"^version:\s*(\d+)\s*$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class PromptTemplate:
    """One prompt template: its file name (no ``.md``), version, body text and sha256."""

    name: str
    version: int
    text: str
    sha256: str

    @property
    def placeholders(self) -> frozenset[str]:
        """The placeholder names the template expects."""
        return frozenset(_PLACEHOLDER.findall(self.text))

    @property
    def recipe(self) -> str:
        """``name@version:sha12``: identifies this exact template in cache keys and metadata."""
        return f"{self.name}@{self.version}:{self.sha256[:12]}"

    def render(self, **values: object) -> str:
        """Fill every placeholder with ``str(value)``.

        Raises ValueError when a placeholder has no value or a value names no placeholder.
        """
        expected = self.placeholders
        missing = expected - values.keys()
        extra = values.keys() - expected
        if missing or extra:
            raise ValueError(
                f"prompt {self.name!r} needs {sorted(expected)}; "
                f"missing {sorted(missing)}, unexpected {sorted(extra)}"
            )
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.text)


def prompt_names() -> list[str]:
    """Names of every shipped template, sorted."""
    return sorted(p.stem for p in (assets_dir() / "prompts").glob("*.md"))


@cache
def load_prompt(name: str) -> PromptTemplate:
    """Load ``assets/prompts/<name>.md``.

    Raises ValueError for a malformed name or a file without a ``version: N`` first line, and
    FileNotFoundError (listing the shipped names) when no such template exists.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"prompt name must be lower_snake_case, got {name!r}")
    path = assets_dir() / "prompts" / f"{name}.md"
    if not path.is_file():
        raise FileNotFoundError(
            f"no prompt template {name!r}; shipped: {', '.join(prompt_names())}"
        )
    raw = path.read_text(encoding="utf-8")
    first, _, body = raw.partition("\n")
    match = _VERSION_LINE.match(first.strip())
    if not match:
        raise ValueError(f"{path}: first line must be 'version: N', got {first!r}")
    text = body.strip("\n") + "\n"
    digest = hashlib.sha256(f"{name}\n{match.group(1)}\n{text}".encode()).hexdigest()
    return PromptTemplate(name=name, version=int(match.group(1)), text=text, sha256=digest)


def prompt_hash(*names: str) -> str:
    """A 12-hex-digit hash of the named templates (order-independent) for a code_version.

    Raises ValueError when no name is given, and what :func:`load_prompt` raises otherwise.
    """
    if not names:
        raise ValueError("prompt_hash needs at least one template name")
    joined = "\n".join(load_prompt(n).recipe for n in sorted(set(names)))
    return hashlib.sha256(joined.encode()).hexdigest()[:12]
