"""NLI groundedness (HCAT §3.2.2) on the FaithDial audit: AUROC raw and length-matched, speed, memory.

Labels (../shared/validation/README.md): BEGIN label ``entailment`` alone = supported (1);
any ``hallucination`` (incl. ``entailment,hallucination`` = partial hallucination) = not supported
(0); ``generic`` / ``uncooperative`` (without hallucination) are left out. The premise is the
knowledge passage split into sentences, the hypotheses are the response's sentences; the answer
score is the paper's mean of σ(D_i) (and the min, i.e. the least grounded sentence, shown apart).

Length-matched AUROC: only (supported, unsupported) response pairs whose word counts are within a
factor ``--ratio`` (default 1.25) of each other are compared; the figure is the fraction of those
pairs the score orders correctly (ties ½). A score that tracks length alone gets ≈ 0.5 there; the
response length itself is printed as a reference "score".

Baseline in the same run: MiniLM max-similarity groundedness (§3.2.1: mean over answer sentences of
the max cosine to a context sentence).

QA-style synthetic check (``--qa-check``): length-matched twins from ``qa_pairs`` (faithful answer
span vs a same-length span from elsewhere / with a swapped name, number or keyword) generated from
the Python standard library's module and class/function docstrings — a different corpus than the
pydoc_data topics the packaged head is trained on. It is the same generator family as the training
pairs, so it checks transfer across corpora, not across hallucination styles.

    python benchmarks/nli_faithdial.py [--weights PATH] [--limit N] [--qa-check]
"""

from __future__ import annotations

import argparse
import glob
import re
import resource
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.core.chunking import split_sentences  # noqa: E402
from hcat_pipeline.core.metrics.groundedness_nli import groundedness_nli_batch  # noqa: E402
from hcat_pipeline.core.metrics.nli import auroc, length_matched_auroc  # noqa: E402
from hcat_pipeline.resources.nli import NLIModel  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "validation" / "faithdial-audit"


def label_of(begin: str) -> int | None:
    labs = {x.strip() for x in re.split(r"[,.]", begin.lower()) if x.strip()}
    if any(x.startswith("halluc") for x in labs):
        return 0
    if labs and all(x.startswith("entailment") for x in labs):
        return 1
    return None  # generic / uncooperative


def load(data_dir: Path = DATA) -> list[dict]:
    rows = []
    for f in sorted(glob.glob(str(data_dir / "*.csv"))):
        d = pl.read_csv(f, infer_schema=False)
        kcol = "knowledge" if "knowledge" in d.columns else "evidence"
        lcol = "begin_label" if "begin_label" in d.columns else "BEGIN"
        rcol = [c for c in d.columns if c not in (kcol, "history", lcol, "vrm_label", "VRM")][0]
        name = Path(f).stem
        for k, r, lab in d.select(kcol, rcol, lcol).iter_rows():
            y = label_of(lab or "")
            if not k or not r or y is None:
                continue
            rows.append({"source": name.split("__")[0], "dataset": name, "knowledge": k, "response": r, "label": y})
    return rows


QA_CHECK_MODULES = """argparse asyncio base64 bisect calendar collections contextlib copy csv dataclasses datetime
decimal difflib email enum fileinput fnmatch fractions ftplib functools getopt gettext glob gzip hashlib heapq hmac html
http imaplib inspect io ipaddress itertools json logging lzma mailbox mimetypes numbers operator optparse os pathlib pickle
pkgutil platform plistlib poplib pprint queue random re sched secrets selectors shelve shlex shutil signal smtplib socket
socketserver sqlite3 ssl statistics string struct subprocess tarfile tempfile textwrap threading timeit tokenize trace
traceback types typing unittest urllib uuid warnings weakref xml zipfile zlib""".split()


def stdlib_docstring_texts() -> list[str]:
    """One text per stdlib module: its docstring and those of its public classes and functions."""
    import importlib
    import inspect

    texts = []
    for m in QA_CHECK_MODULES:
        try:
            mod = importlib.import_module(m)
        except Exception:  # noqa: BLE001 - a module missing on this build is skipped
            continue
        parts = [inspect.getdoc(mod) or ""]
        for n, o in sorted(vars(mod).items()):
            if not n.startswith("_") and getattr(o, "__module__", None) == m and (inspect.isfunction(o) or inspect.isclass(o)):
                parts.append(inspect.getdoc(o) or "")
        texts.append("\n\n".join(p for p in parts if p))
    return texts


def qa_check(model: NLIModel, n_pairs: int = 1000, seed: int = 1, ratio: float = 1.25) -> None:
    from hcat_pipeline.core.metrics.nli import documents_from_texts, qa_pairs

    pairs = qa_pairs(documents_from_texts(stdlib_docstring_texts()), n_pairs=n_pairs, seed=seed)
    y = np.array([p.label for p in pairs])
    sig = model.decision([p.premise for p in pairs], [p.hypothesis for p in pairs])["sigma"]
    n = np.array([len(p.hypothesis.split()) for p in pairs])
    lm = length_matched_auroc(y, sig, n, ratio)
    print(f"QA-style check (stdlib docstrings, {len(pairs)} twins-pairs, seed {seed}): "
          f"raw AUROC {auroc(y, sig):.3f}   length-matched {lm['auroc']:.3f}")


def report(name: str, rows: list[dict], scores: np.ndarray, ratio: float) -> None:
    y = np.array([r["label"] for r in rows])
    n = np.array([len(r["response"].split()) for r in rows])
    lm = length_matched_auroc(y, scores, n, ratio)
    print(f"  {name:34s} raw AUROC {auroc(y, scores):.3f}   length-matched {lm['auroc']:.3f}  ({lm['pairs']} pairs)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="", help="head JSON (default: the packaged head)")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N responses (0: all)")
    ap.add_argument("--ratio", type=float, default=1.25, help="length-matching factor")
    ap.add_argument("--per-source", action="store_true", help="also report per response generator")
    ap.add_argument("--qa-check", action="store_true", help="also run the QA-style synthetic check on stdlib docstrings")
    args = ap.parse_args(argv)

    rows = load()
    if args.limit:
        rows = rows[: args.limit]
    y = np.array([r["label"] for r in rows])
    print(f"FaithDial audit: {len(rows)} responses ({int(y.sum())} supported, {int((1 - y).sum())} hallucinated)")
    items = [(split_sentences(r["response"]) or [r["response"]], split_sentences(r["knowledge"]) or [r["knowledge"]]) for r in rows]
    n_pairs = sum(len(a) for a, _ in items)

    model = NLIModel(weights_path=args.weights)
    # warm-up (model load) outside the timing; embeddings of these texts then come from the cache,
    # so time the uncached path explicitly on a fresh cache-free model as well
    model.decision([["warm up."]], ["warm up."])
    t0 = time.perf_counter()
    res = groundedness_nli_batch(items, model)
    dt_cached = time.perf_counter() - t0
    nocache = NLIModel(weights_path=args.weights)
    nocache._embedder = type(model._embedding_model())(use_cache=False)
    sub = items[: min(200, len(items))]
    sub_pairs = sum(len(a) for a, _ in sub)
    t0 = time.perf_counter()
    groundedness_nli_batch(sub, nocache)
    dt_fresh = time.perf_counter() - t0

    emb = model._embedding_model()
    maxsim = []
    for a, c in items:
        A, C = emb.embed(a), emb.embed(c)
        maxsim.append(float((A @ C.T).max(axis=1).mean()))
    maxsim = np.array(maxsim)
    mean_sigma = np.array([r["groundedness_nli"] for r in res])
    min_sigma = np.array([r["nli_min_sigma"] for r in res])
    length = np.array([len(r["response"].split()) for r in rows], dtype=float)

    print(f"(premise = knowledge sentences; {n_pairs} answer-sentence pairs; length-matched = pairs within ×{args.ratio} words)")
    report("groundedness_nli (mean σ(D))", rows, mean_sigma, args.ratio)
    report("groundedness_nli min σ(D)", rows, min_sigma, args.ratio)
    report("baseline MiniLM max-sim (§3.2.1)", rows, maxsim, args.ratio)
    report("reference: answer length (words)", rows, -length, args.ratio)
    if args.per_source:
        for src in sorted({r["source"] for r in rows}):
            idx = [i for i, r in enumerate(rows) if r["source"] == src]
            sub_rows = [rows[i] for i in idx]
            print(f" {src}:")
            report("groundedness_nli (mean σ(D))", sub_rows, mean_sigma[idx], args.ratio)
            report("baseline MiniLM max-sim", sub_rows, maxsim[idx], args.ratio)
    print(f"speed: {n_pairs / dt_cached:.0f} pairs/s with warm embedding cache; "
          f"{sub_pairs / dt_fresh:.0f} pairs/s embedding from scratch ({sub_pairs} pairs)")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    head = model.head()
    if args.qa_check:
        qa_check(model, ratio=args.ratio)
    print(f"head: {len(head.feature_names)} features, ‖w‖ = {head.w_norm:.3f}, trained on {head.info.get('n_train')} pairs "
          f"from {head.info.get('corpus')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
