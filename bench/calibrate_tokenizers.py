"""Measure the cl100k → model safety factors stored in assets/tokenizers/calibration.json.

For every Mistral tokenizer shipped in ``mistral-common`` (SentencePiece v1/v3/v7, Tekken),
Llama 3's shipped in ``llama-models`` and Qwen's shipped in ``dashscope``, count each
document of the corpus in the model's tokens and in cl100k tokens and record the ratio.
The factor is the maximum per-document ratio plus a stated margin, rounded up to 2
decimals: counting ``ceil(cl100k × factor)`` then never undercounts any document of the
corpus. For a vocabulary built on cl100k's whose estimate adds pieces (Qwen: one token per
digit), the ratio is taken to that estimate at factor 1, so the factor covers what the
additions do not.

Corpus: every note of ``assets/demo/notes/til.jsonl`` (title + blank line + content, one
document per note) and the five seed documents (``*.txt`` of the seeds folder).

Usage: ``python bench/calibrate_tokenizers.py [SEEDS_DIR] [--write]`` (SEEDS_DIR defaults to
``../shared/seeds`` beside the repository; ``--write`` rewrites calibration.json).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
from pathlib import Path

from selene_dag.context import tokens
from selene_dag.paths import assets_dir

MARGIN = 0.03
MIN_BASELINE_TOKENS = 20  # below this a ratio is noise; such notes are reported apart


def load_corpus(seeds_dir: Path) -> tuple[list[tuple[str, str]], dict[str, object]]:
    """(name, text) documents of the corpus and a description of it (files + sha256)."""
    notes_path = assets_dir() / "demo" / "notes" / "til.jsonl"
    docs: list[tuple[str, str]] = []
    for line in notes_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            note = json.loads(line)
            docs.append((f"note:{note['id']}", f"{note['title']}\n\n{note['content']}"))
    n_notes = len(docs)
    seeds = sorted(seeds_dir.glob("*.txt"))
    if not seeds:
        raise SystemExit(f"no seed documents (*.txt) in {seeds_dir}")
    for path in seeds:
        docs.append((f"seed:{path.name}", path.read_text(encoding="utf-8")))
    description = {
        "notes": {
            "file": "assets/demo/notes/til.jsonl",
            "documents": n_notes,
            "document": "title + '\\n\\n' + content, one per note",
            "sha256": hashlib.sha256(notes_path.read_bytes()).hexdigest(),
        },
        "seeds": {
            "files": [p.name for p in seeds],
            "sha256": [hashlib.sha256(p.read_bytes()).hexdigest() for p in seeds],
        },
    }
    return docs, description


def measure(docs: list[tuple[str, str]]) -> dict[str, dict[str, object]]:
    """Per Mistral family and Llama 3: max / mean / p99 ratio and the resulting factor."""
    texts = [t for _, t in docs]
    base = tokens.baseline().count_batch(texts)
    families: dict[str, dict[str, object]] = {}
    own_files = {"llama3": tokens.llama3_tokenizer_file(), "qwen": tokens.qwen_tokenizer_file()}
    files = {
        **{
            f: (f"mistral_common/data/{name}", "mistral-common")
            for f, name in tokens.MISTRAL_FILES.items()
        },
        "llama3": ("llama_models/llama3/tokenizer.model", "llama-models"),
        "qwen": ("dashscope/resources/qwen.tiktoken", "dashscope"),
    }
    for family, (filename, package) in files.items():
        own = family in own_files
        tok = tokens._OWN_TOKENIZER[family]() if own else tokens._mistral(family)
        if tok is None or (own and own_files[family] is None):
            print(f"skip {family}: {package} not installed", file=sys.stderr)
            continue
        counts = tok.count_batch(texts)
        # A cl100k-built vocabulary is estimated by cl100k plus its pieces (if any).
        scaled = tokens.ScaledTokenizer(
            tokens.baseline(), 1.0, family, **tokens._ESTIMATE_PIECES.get(family, {})
        )
        adds = own and (scaled.digits or scaled.spaces)
        estimate = scaled.count_batch(texts) if adds else base
        ratios = [
            (m / e, name)
            for (name, _), m, e, b in zip(docs, counts, estimate, base, strict=True)
            if b >= MIN_BASELINE_TOKENS
        ]
        short = [
            m / e
            for m, e, b in zip(counts, estimate, base, strict=True)
            if 0 < b < MIN_BASELINE_TOKENS
        ]
        values = sorted(r for r, _ in ratios)
        worst, worst_doc = max(ratios)
        factor = math.ceil((worst + MARGIN) * 100) / 100
        families[family] = {
            "tokenizer_file": filename,
            "documents": len(ratios),
            "max_ratio": round(worst, 4),
            "max_ratio_document": worst_doc,
            "mean_ratio": round(statistics.fmean(values), 4),
            "p99_ratio": round(values[min(len(values) - 1, int(0.99 * len(values)))], 4),
            "corpus_ratio": round(sum(counts) / sum(base), 4),
            **(
                {"ratio_to": "cl100k tokens + one per digit past cl100k's groups of three"}
                if adds
                else {}
            ),
            "short_documents_max_ratio": round(max(short), 4) if short else None,
            "factor": factor,
        }
    return families


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_seeds = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
    parser.add_argument("seeds_dir", nargs="?", type=Path, default=default_seeds)
    parser.add_argument("--write", action="store_true", help="rewrite calibration.json")
    args = parser.parse_args(argv)
    docs, corpus = load_corpus(args.seeds_dir)
    families = measure(docs)
    result = {
        "version": 1,
        "baseline": tokens.BASELINE_ENCODING,
        "method": (
            "factor = ceil_2dp(max over documents of model_tokens / cl100k_tokens + margin); "
            f"documents with fewer than {MIN_BASELINE_TOKENS} cl100k tokens are excluded from "
            "the max (reported as short_documents_max_ratio)"
        ),
        "margin": MARGIN,
        "script": "bench/calibrate_tokenizers.py",
        "corpus": corpus,
        "families": families,
        "unknown_factor": max(f["factor"] for f in families.values()),
    }
    text = json.dumps(result, indent=2) + "\n"
    if args.write:
        out = assets_dir() / "tokenizers" / "calibration.json"
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
