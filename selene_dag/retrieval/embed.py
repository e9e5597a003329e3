"""Offline dense embeddings for passages: wordllama's 256-d static token embeddings, shipped
inside its PyPI wheel, mean-pooled and L2-normalized. No network, no GPU.

The wheel carries its weights under ``wordllama/weights/`` and its tokenizer under
``wordllama/tokenizers/``, but the loader looks for a packaged tokenizer under
``wordllama/tokenizer/`` and otherwise under ``<cache_dir>/tokenizers/``; so the tokenizer
file is copied from the package into a cache folder of ours and the loader is told never
to download. ``embed_texts`` pools token vectors itself (no padding to the longest text in
a batch), so cost grows with the tokens embedded.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence
from functools import cache
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from selene_dag.errors import SeleneError

EMBED_MODEL = "wordllama-l2_supercat-256"
DIM = 256
_CONFIG = "l2_supercat"
# Texts per tokenizer batch.
BATCH = 1024
# Tokens of one text that count: a passage is at most ~300 tokens; a question is short.
MAX_TOKENS = 512


class EmbeddingError(SeleneError, RuntimeError):
    """The embedding model cannot be loaded from its installed package."""


def cache_dir() -> Path:
    """Where the tokenizer copy lives: ``$XDG_CACHE_HOME/selene-dag/wordllama`` (default
    ``~/.cache/selene-dag/wordllama``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "selene-dag" / "wordllama"


def _prepare(package: Path, target: Path) -> Path:
    """Copy the package's tokenizer files into ``target/tokenizers`` (once); ``target``."""
    source = package / "tokenizers"
    dest = target / "tokenizers"
    for path in source.glob("*.json"):
        out = dest / path.name
        if not out.is_file() or out.stat().st_size != path.stat().st_size:
            dest.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(path, tmp)
            tmp.replace(out)
    return target


@cache
def load_model() -> Any:
    """The wordllama model (``WordLlamaInference``), loaded once per process from the
    installed wheel, never from the network. Raises EmbeddingError when the package or
    its files are missing."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
        from wordllama import WordLlama
    except ImportError as exc:
        raise EmbeddingError("dense retrieval needs the 'wordllama' package") from exc
    finally:
        # wordllama's import calls logging.basicConfig(INFO): leave the root logger as it was.
        root.handlers[:], root.level = handlers, level
    package = Path(wordllama.__file__).resolve().parent
    try:
        target = _prepare(package, cache_dir())
        model = WordLlama.load(config=_CONFIG, dim=DIM, cache_dir=target, disable_download=True)
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot load wordllama from {package}: {exc}") from exc
    model.tokenizer.no_padding()
    model.tokenizer.enable_truncation(MAX_TOKENS)
    return model


def embed_texts(texts: Sequence[str]) -> np.ndarray:
    """``(len(texts), 256)`` float32 rows, each the mean of its tokens' vectors scaled to
    unit length (a text without tokens gives a zero row). Deterministic."""
    model = load_model()
    table: np.ndarray = model.embedding
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for first in range(0, len(texts), BATCH):
        # encode_batch_fast: the same ids without character offsets, a third faster.
        encoded = model.tokenizer.encode_batch_fast(
            list(texts[first : first + BATCH]), add_special_tokens=False
        )
        ids = [e.ids for e in encoded]
        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum([len(i) for i in ids], out=indptr[1:])
        if not indptr[-1]:
            continue
        flat = np.clip(
            np.fromiter(chain.from_iterable(ids), np.int64, int(indptr[-1])), 0, table.shape[0] - 1
        )
        if len(ids) == 1:  # a question: no need to import scipy (~0.1 s of `ask`)
            out[first] = table[flat].sum(axis=0)
            continue
        from scipy.sparse import csr_matrix

        # Token counts per text as a sparse matrix: one product sums every text's vectors.
        counts = csr_matrix(
            (np.ones(len(flat), dtype=np.float32), flat, indptr),
            shape=(len(ids), table.shape[0]),
        )
        out[first : first + len(ids)] = counts @ table
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def embed_query(text: str) -> np.ndarray:
    """The unit vector of one question (zeros when it has no token)."""
    return embed_texts([text])[0]
