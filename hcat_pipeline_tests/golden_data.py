"""Tiny golden-set data the pure golden / exam tests share: two Python reference chunks, deterministic bag-of-words
embeddings standing in for MiniLM, a generated-query row builder and a handful of cases of every kind."""

import hashlib
import re

import numpy as np

from hcat_pipeline.golden.cases import new_case

PASS = (
    "The pass statement is a null operation: when it is executed, nothing happens. "
    "It is useful as a placeholder when a statement is required syntactically but no code needs to be executed."
)
BREAK = "The break statement terminates the nearest enclosing for or while loop. The else clause of the loop is skipped."
CHUNKS = {"c1": PASS, "c2": BREAK}


def bow_embed(texts):
    """Deterministic bag-of-words vectors: cosine = word overlap (stands in for MiniLM in pure tests)."""
    out = np.zeros((len(texts), 512), np.float32)
    for i, t in enumerate(texts):
        for w in re.findall(r"[a-z0-9_]+", t.lower()):
            out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 512] += 1
    n = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(n == 0, 1, n)


def row(qtype, query, answer, chunk_ids=("c1",), **kw):
    r = {
        "query_id": f"q-{qtype}-{abs(hash(query)) % 10**6}", "query_type": qtype, "chunk_id": chunk_ids[0],
        "source_chunk_ids": list(chunk_ids), "query": query, "reference_answer": answer, "options": [],
        "correct_index": -1, "answer_label": None, "evidence": None, "error": None,
    }  # fmt: skip
    r.update(kw)
    return r


def bag_embed(texts: list[str]) -> np.ndarray:
    """A deterministic bag-of-words embedding (hashed words, L2-normalised): similar words ⇒ similar vectors."""
    out = np.zeros((len(texts), 256), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().replace(".", " ").replace(",", " ").split():
            out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 256] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


def sample_cases():
    base = new_case(
        category="happy_path", query_type="simple", query="What does the pass statement do?",
        reference_answer="Nothing happens.", expected_behavior="answer", source_chunk_ids=["c1"], stratum=0,
        stratum_label="pass, null", tags=["simple"], model="m", prompt_hash="p", seed=0, corpus_hash="h",
    )  # fmt: skip
    mc = new_case(
        category="happy_path", query_type="multiple_choice", query="Which statement is a null operation?",
        options=["break", "pass", "del", "raise"], reference_answer="pass", expected_behavior="answer", source_chunk_ids=["c1"],
    )  # fmt: skip
    ood = new_case(category="out_of_scope", query="What is the capital of Mongolia?", expected_behavior="abstain", constraints=["must abstain"])
    typo = new_case(
        category="robustness", query_type="simple", query="Waht does the pass statment do?", reference_answer="Nothing happens.",
        expected_behavior="answer", source_chunk_ids=["c1"], base_case_id=base["case_id"], variant_kind="typo",
    )  # fmt: skip
    return [base, mc, ood, typo]
