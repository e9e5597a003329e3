"""Offline dense embeddings for passages: wordllama's 256-d static token embeddings, shipped
inside its PyPI wheel, mean-pooled and L2-normalized. No network, no GPU.

The wheel carries its weights under ``wordllama/weights/`` and its tokenizer under
``wordllama/tokenizers/``. They are read straight from the installed package's folder with
``safetensors`` and ``tokenizers`` (the libraries wordllama itself loads them with), without
importing wordllama: its loader looks for the tokenizer elsewhere, may try a download, and
importing it costs each process that embeds about 0.2 s. ``embed_texts`` pools token
vectors itself (no padding to the longest text in a batch), so cost grows with the tokens
embedded.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from selene_dag.errors import SeleneError

EMBED_MODEL = "wordllama-l2_supercat-256"
DIM = 256
# The files of that model inside the wordllama package, and the weights' tensor name.
_WEIGHTS = "weights/l2_supercat_256.safetensors"
_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
_TENSOR = "embedding.weight"
# Texts per tokenizer batch.
BATCH = 1024
# Tokens of one text that count: a passage is at most ~300 tokens; a question is short.
MAX_TOKENS = 512
# Up to this many texts are summed without scipy's sparse product.
_FEW_TEXTS = 64


class EmbeddingError(SeleneError, RuntimeError):
    """The embedding model cannot be loaded from its installed package."""


# The tokenizer's own normalizer: a "▁" before the text and every space made a "▁".
_METASPACE = "\u2581"
_NORMALIZER = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": _METASPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": _METASPACE},
    ],
}


@dataclass(frozen=True)
class EmbeddingModel:
    """The token embedding table as stored (float16, one row per token id) and its
    tokenizer. ``prenormalized``: the tokenizer's normalizer is done here by
    :meth:`normalize` and removed from the tokenizer."""

    embedding: np.ndarray
    tokenizer: Any
    prenormalized: bool = False

    def normalize(self, texts: Sequence[str]) -> list[str]:
        """``texts`` as the tokenizer takes them: normalized here when ``prenormalized``
        (the same strings its normalizer makes: a "▁" before a non-empty text, every
        space a "▁"), else unchanged."""
        if not self.prenormalized:
            return list(texts)
        return [_METASPACE + t.replace(" ", _METASPACE) if t else t for t in texts]

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """The float32 rows of ``ids`` (exact: every float16 value is a float32 one)."""
        return self.embedding[ids].astype(np.float32)


def package_dir() -> Path:
    """The installed wordllama package's folder (found without importing it). Raises
    EmbeddingError when the package is not installed."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError("dense retrieval needs the 'wordllama' package")
    return Path(next(iter(spec.submodule_search_locations)))


@cache
def load_model() -> EmbeddingModel:
    """The model, loaded once per process from the installed wheel's files, never from
    the network. Raises EmbeddingError when the package or its files are missing."""
    from safetensors import safe_open
    from tokenizers import Tokenizer

    package = package_dir()
    try:
        tokenizer = Tokenizer.from_file(str(package / _TOKENIZER))
        # Kept as stored: a question or an edited note's passages need a few rows, and
        # converting the whole table to float32 costs every process 0.1 s.
        with safe_open(str(package / _WEIGHTS), framework="np", device="cpu") as weights:
            table = weights.get_tensor(_TENSOR)
    except Exception as exc:  # tokenizers raises a bare Exception for a missing file
        raise EmbeddingError(f"cannot load the wordllama model from {package}: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    # The normalizer keeps every character's alignment with the text, which the embedding
    # never reads; two str.replace calls make the same string, and embedding 12-30% faster.
    normalizer = tokenizer.normalizer
    prenormalized = normalizer is not None and json.loads(normalizer.__getstate__()) == _NORMALIZER
    if prenormalized:
        tokenizer.normalizer = None
    return EmbeddingModel(table, tokenizer, prenormalized)


@cache
def float32_table() -> np.ndarray:
    """The model's whole table in float32, converted once per process (0.1 s): for sums
    over many texts."""
    return np.ascontiguousarray(load_model().embedding.astype(np.float32))


def embed_texts(texts: Sequence[str]) -> np.ndarray:
    """``(len(texts), 256)`` float32 rows, each the mean of its tokens' vectors scaled to
    unit length (a text without tokens gives a zero row). Deterministic."""
    model = load_model()
    size = model.embedding.shape[0]
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for first in range(0, len(texts), BATCH):
        # encode_batch_fast: the same ids without character offsets, a third faster.
        encoded = model.tokenizer.encode_batch_fast(
            model.normalize(texts[first : first + BATCH]), add_special_tokens=False
        )
        ids = [e.ids for e in encoded]
        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum([len(i) for i in ids], out=indptr[1:])
        if not indptr[-1]:
            continue
        flat = np.clip(
            np.fromiter(chain.from_iterable(ids), np.int64, int(indptr[-1])), 0, size - 1
        )
        if len(ids) <= _FEW_TEXTS:
            # A question, or the passages of an edited note: summed in numpy, without
            # importing scipy (0.2-0.3 s, more than the work), slower only for many texts.
            present = np.flatnonzero(np.diff(indptr))
            # Texts without tokens stay out of the segments (reduceat would give them
            # their neighbour's first row).
            out[first + present] = np.add.reduceat(model.rows(flat), indptr[present], axis=0)
            continue
        from scipy.sparse import csr_matrix

        # Token counts per text as a sparse matrix: one product sums every text's vectors.
        counts = csr_matrix(
            (np.ones(len(flat), dtype=np.float32), flat, indptr),
            shape=(len(ids), size),
        )
        out[first : first + len(ids)] = counts @ float32_table()
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def embed_query(text: str) -> np.ndarray:
    """The unit vector of one question (zeros when it has no token)."""
    return embed_texts([text])[0]
