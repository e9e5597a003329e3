"""The same question over the same text gives the same relevance in every process: sums over
sets of stems must not depend on the order a set iterates in, which changes with each
process's string hashing (``PYTHONHASHSEED``). A last-bit difference decided which of two
equal pieces a cut kept, so a pack changed from one run to the next."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
from selene_dag.retrieval.passages import direct_scores, segment, title_share
from selene_dag.retrieval.terms import CoverageMatcher, query_terms, weights_by_stem
question = "where did alpha bravo charlie delta echo foxtrot golf hotel india juliet appear"
terms = query_terms(question)
# IDF-like weights whose float sum depends on the order they are added in.
weights = {s: w for s, w in zip(sorted(weights_by_stem([(t, 1) for t in terms], 2)),
                                [0.1, 0.2, 0.3, 0.7, 1.1, 1e-9, 3.3, 0.45, 2.2, 5.5, 0.01])}
matcher = CoverageMatcher(terms)
pieces = segment("alpha bravo charlie delta echo foxtrot golf hotel india juliet.\\n"
                 "alpha charlie echo golf india.\\nbravo delta foxtrot hotel juliet.")
print([repr(x) for x in direct_scores(pieces, matcher, weights)],
      repr(title_share("alpha bravo charlie delta echo foxtrot golf", matcher, weights)))
"""


def test_relevance_is_the_same_whatever_the_string_hashing() -> None:
    outputs = set()
    for seed in range(8):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        ran = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(ran.stdout)
    assert len(outputs) == 1, outputs
