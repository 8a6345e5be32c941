"""The case validator on generated cases of corpora nobody here wrote, one corpus held out at a time (issue 47).

    python benchmarks/case_validity_corpora.py [--corpora benchmarks/data/case_validity_corpora] [--fluency] [--reader]

Each corpus folder (``benchmarks/data/case_validity_corpora/<name>/``, README there) holds its documents and
``cases.jsonl``: the happy-path cases the project's generator wrote on it (``benchmarks/generate_on_corpus.py``), each
labelled ``sound`` / ``unsound`` with the reason by a reader who did not write the generator.

Two validators are scored per held-out corpus (AUROC of sound vs unsound with a bootstrap 95 % CI and n):

- ``validity_score``: ``golden.validity`` as shipped — its rules and weights fixed before these corpora were labelled,
  so every corpus is held out;
- ``fitted``: a logistic regression over the validator's checks and the reader's signals (``golden.case_signals``;
  with ``--fluency`` also the question's mean token log-probability under the packaged LLM), fitted on the other
  corpora only (leave one corpus out) — what fitting buys, or not.

With ``--reader`` also a third score, tried and not kept: the packaged generator (the 1.5B coder model) read as a strict
reviewer — an instruction naming the faults and four worked examples from the issue text and the default corpus, fixed
before it was run — scored by the log-odds of "GOOD" over "BAD" (slow: two LLM passes a case).

Prints the per-corpus table and every case the shipped validator gets wrong (sound judged invalid, unsound judged
valid) with its reasons.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from case_validity import auroc, bootstrap_auroc  # noqa: E402

from hcat_pipeline.golden.case_signals import SIGNALS, text_signals  # noqa: E402

HERE = ROOT / "benchmarks" / "data" / "case_validity_corpora"
CHECKS = ("support", "round_trip", "alignment")


def load(folder: Path) -> list[dict]:
    path = folder / "cases.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()] if path.is_file() else []
    return [r for r in rows if r.get("label") in ("sound", "unsound")]


def fluency(cases: list[dict]) -> list[float]:
    """Mean token log-probability of each question as the packaged LLM's reply to "Ask a question about <topic>."."""
    from hcat_pipeline.resources.llm import LLM

    llm = LLM(provider="local")
    out = []
    for c in cases:
        topic = c.get("stratum_label") or "the documents"
        r = llm.option_logprobs(f"Ask one question about {topic}.", [c["query"]])[0]
        out.append(r["logprob"] / max(r["n_tokens"], 1))
    return out


READER_SYSTEM = (
    "You review test questions written from a set of documents. A question is GOOD only if a stranger who has the documents, but "
    "not the passage it was written from, understands exactly what it asks, and the reference answer answers exactly that. It is "
    "BAD if it is garbled or ungrammatical, vague (many different answers would do), refers to something it does not name (\"the "
    "statement\", \"this way\", \"the command\", \"this License\" when several documents have one), or if the reference answers "
    "something else, only restates the question, or points elsewhere instead of answering. Reply with one word: GOOD or BAD.")
READER_SHOTS = (
    ("What does the inheritance list usually give a list of base classes?", "The inheritance list usually gives a list of base classes.", "BAD"),
    ("What exception is raised when an attribute is set on a method?",
     'Attempting to set an attribute on a method results in an "AttributeError" being raised.', "GOOD"),
    ("What is the first step in looking up a keyword pattern as an attribute on the subject?",
     "The keyword is looked up as an attribute on the subject.", "BAD"),
    ("What is the order of pairs returned by the popitem() method?", "Pairs are returned in LIFO (last-in, first-out) order.", "GOOD"),
)  # fmt: skip


def reader(cases: list[dict]) -> np.ndarray:
    """log P("GOOD") - log P("BAD") of the packaged generator read as a strict reviewer, per case."""
    from hcat_pipeline.models import GENERATOR_MODEL
    from hcat_pipeline.resources.llm import LLM

    llm = LLM(provider="local", model=GENERATOR_MODEL)
    shots = [m for q, a, label in READER_SHOTS for m in ({"role": "user", "content": f"Question: {q}\nReference answer: {a}"},
                                                       {"role": "assistant", "content": label})]  # fmt: skip
    out = []
    for c in cases:
        msgs = [{"role": "system", "content": READER_SYSTEM}, *shots,
                {"role": "user", "content": f"Question: {c['query']}\nReference answer: {c['reference_answer']}"}]  # fmt: skip
        good, bad = llm.option_logprobs(msgs, ["GOOD", "BAD"])
        out.append(good["logprob"] - bad["logprob"])
    return np.array(out)


def features(cases: list[dict], validity: list, flu: list[float] | None) -> np.ndarray:
    rows = []
    for i, (c, v) in enumerate(zip(cases, validity, strict=True)):
        sig = text_signals(c["query"], c["reference_answer"], c.get("query_type"))
        hard = float(v.verdict == "invalid")
        rows.append([v.checks.get(k, 1.0) for k in CHECKS] + [sig[k] for k in SIGNALS] + [hard] + ([flu[i]] if flu else []))
    return np.array(rows, dtype=float)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", default=str(HERE))
    ap.add_argument("--fluency", action="store_true", help="add the LLM fluency feature to the fitted model (slow: one LLM pass a case)")
    ap.add_argument("--reader", action="store_true", help="also score the generator read as a strict reviewer (slow: two LLM passes a case)")
    args = ap.parse_args(argv)
    from sklearn.linear_model import LogisticRegression

    from hcat_pipeline.golden.case_checks import validate_cases
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.nli import NLIModel

    embed, parse = EmbeddingModel().embed, NLIModel().docs
    data = {}
    for folder in sorted(p for p in Path(args.corpora).iterdir() if p.is_dir()):
        cases = load(folder)
        if not cases:
            continue
        sources = {c["case_id"]: c.get("source_text") or "" for c in cases}
        val = validate_cases([{**c, "expected_behavior": "answer"} for c in cases], sources, embed, parse=parse)
        flu = fluency(cases) if args.fluency else None
        y = np.array([c["label"] == "sound" for c in cases])
        data[folder.name] = (cases, val, features(cases, val, flu), y)
        if args.reader:
            r = reader(cases)
            lo, hi = bootstrap_auroc(r, y)
            print(f"{folder.name}: the generator as a strict reviewer AUROC {auroc(r, y):.3f} ({lo:.3f}-{hi:.3f}), n = {len(y)}", flush=True)
    if len(data) < 2:
        print(f"labelled cases.jsonl in fewer than two corpora under {args.corpora}", file=sys.stderr)
        return 2
    print(f"{'held-out corpus':<16}{'n':>4}{'sound':>7}   validity_score AUROC (95% CI)   fitted (other corpora) AUROC (95% CI)   "
          f"sound→valid  unsound→invalid")  # fmt: skip
    for name, (_cases, val, X, y) in data.items():
        s = np.array([v.score for v in val])
        lo, hi = bootstrap_auroc(s, y)
        Xtr = np.vstack([d[2] for k, d in data.items() if k != name])
        ytr = np.concatenate([d[3] for k, d in data.items() if k != name])
        model = LogisticRegression(C=1.0, max_iter=1000).fit(Xtr, ytr)
        p = model.predict_proba(X)[:, 1]
        flo, fhi = bootstrap_auroc(p, y)
        sv = sum(v.verdict == "valid" for v, t in zip(val, y, strict=True) if t)
        ui = sum(v.verdict == "invalid" for v, t in zip(val, y, strict=True) if not t)
        print(f"{name:<16}{len(y):>4}{int(y.sum()):>7}   {auroc(s, y):.3f} ({lo:.3f}-{hi:.3f})              "
              f"{auroc(p, y):.3f} ({flo:.3f}-{fhi:.3f})                {sv}/{int(y.sum())}        {ui}/{int((~y).sum())}")  # fmt: skip
    for name, (cases, val, _, y) in data.items():
        print(f"\n{name}: errors of the shipped validator")
        for c, v, t in zip(cases, val, y, strict=True):
            if (t and v.verdict != "valid") or (not t and v.verdict != "invalid"):
                print(f"  {c['case_id']} {c['label']:<7} -> {v.verdict:<7} {v.score:.2f}  Q: {c['query'][:90]!r}  why: {c.get('reason', '')[:80]}"
                      f"  | {'; '.join(v.reasons)[:120]}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
