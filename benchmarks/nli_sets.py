"""NLI groundedness (HCAT §3.2.2) on the held-out part of every public set in ../shared/validation/.

Sets and split: ``hcat_pipeline.metrics.nli.sets`` (FaithDial audit, SummEdits 8 domains, FIB
XSum / CNN-DM; groups = knowledge passage / document / article, seeded hash, 40 % held out). Only
the held-out ("test") part is scored here; the head is trained on the "train" part and selected by
cross-validation inside it (``train_nli_head``).

Per set / subset: AUROC of the answer score (mean σ(D) over the answer's sentences, the paper's
``groundedness_nli``; and min σ(D), the least grounded sentence) raw and length-matched (only
(supported, unsupported) pairs within ×``--ratio`` words are compared); per perturbation / edit kind
(that kind's unsupported answers against all supported answers of the same subset); SummEdits also
at sentence level (the edited sentence vs sentences whose label is known) and paired with the seed;
FIB paired (consistent summary scored above the inconsistent one of the same row).

Speed: answer sentences/s on ``--speed-items`` FaithDial and news items, cold (models loaded, no
embedding / parse cache) and warm (second pass, caches filled), and the model load time; peak RSS.
QA-style check: length-matched twins (``qa_pairs``) from the stdlib's docstrings (a corpus the head
is not trained on).

    python benchmarks/nli_sets.py [--weights PATH] [--sets faithdial,summedits,fib] [--save scores.json]
                                  [--compare before.json] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.corpus.chunking import split_sentences  # noqa: E402
from hcat_pipeline.metrics.groundedness_nli import groundedness_nli_batch  # noqa: E402
from hcat_pipeline.metrics.nli.evaluation import auroc, length_matched_auroc  # noqa: E402
from hcat_pipeline.metrics.nli.sets import load_sets, sentence_labels  # noqa: E402
from hcat_pipeline.resources.nli import NLIModel  # noqa: E402


def _sents(text: str) -> list[str]:
    return split_sentences(text) or [text]


def score_items(items, model: NLIModel, chunk: int = 200) -> list[dict]:
    ctx_cache: dict[str, list[str]] = {}
    out = []
    for i in range(0, len(items), chunk):
        part = items[i : i + chunk]
        rows = []
        for it in part:
            if it.context not in ctx_cache:
                ctx_cache[it.context] = _sents(it.context)
            rows.append((_sents(it.answer), ctx_cache[it.context]))
        for it, (a, _), r in zip(part, rows, groundedness_nli_batch(rows, model, "all")):
            seed = _sents(it.seed_answer) if it.seed_answer else None
            out.append({"set": it.set, "subset": it.subset, "kind": it.kind, "label": it.label, "group": it.group,
                        "pair_id": it.pair_id, "words": len(it.answer.split()), "sentences": a,
                        "sentence_labels": sentence_labels(it, a, seed), "sigma": r["nli_sigma"],
                        "reasons": r.get("nli_reasons", [])})
        print(f"  scored {min(i + chunk, len(items))}/{len(items)}", file=sys.stderr, flush=True)
    return out


def _answer(rows, agg):
    y = np.array([r["label"] for r in rows])
    s = np.array([agg(r["sigma"]) if r["sigma"] else 0.5 for r in rows])
    n = np.array([r["words"] for r in rows])
    return y, s, n


def metrics(rows: list[dict], ratio: float) -> dict:
    """{name: (value, count)} for one list of scored rows."""
    out = {}
    for agg_name, agg in (("mean", np.mean), ("min", np.min)):
        y, s, n = _answer(rows, agg)
        lm = length_matched_auroc(y, s, n, ratio)
        out[f"auroc_{agg_name}"] = auroc(y, s)
        out[f"lm_auroc_{agg_name}"] = lm["auroc"]
    out["n"] = len(rows)
    out["n_pos"] = int(sum(r["label"] for r in rows))
    return out


def sentence_level(rows: list[dict], ratio: float) -> dict:
    y, s, n = [], [], []
    for r in rows:
        for sent, lab, sig in zip(r["sentences"], r["sentence_labels"], r["sigma"]):
            if lab is not None:
                y.append(lab)
                s.append(sig)
                n.append(len(sent.split()))
    seen = {}
    for a, b, c in zip(y, s, n):  # the same sentence (unchanged across edits) counted once per score
        seen.setdefault((a, round(b, 9), c), (a, b, c))
    y, s, n = map(np.array, zip(*seen.values())) if seen else ([], [], [])
    return {"auroc": auroc(y, s), "lm_auroc": length_matched_auroc(y, s, n, ratio)["auroc"], "n": len(y)}


def paired(rows: list[dict], key: str = "pair_id") -> tuple[float, int]:
    """Share of (consistent, inconsistent) rows with the same ``key`` ordered correctly by mean σ (ties ½)."""
    by = defaultdict(lambda: ([], []))
    for r in rows:
        by[r[key]][r["label"]].append(np.mean(r["sigma"]) if r["sigma"] else 0.5)
    wins = total = 0.0
    for neg, pos in by.values():
        for p in pos:
            for q in neg:
                wins += 1.0 if p > q else 0.5 if p == q else 0.0
                total += 1
    return (wins / total if total else float("nan")), int(total)


def report(scores: list[dict], ratio: float, before: list[dict] | None = None) -> None:
    def fmt(v):
        return "  -  " if v is None or v != v else f"{v:.3f}"

    def line(name, rows, brows):
        m = metrics(rows, ratio)
        b = metrics(brows, ratio) if brows else {}
        print(f"  {name:38s} n={m['n']:5d} ({m['n_pos']:4d}+)  mean σ: raw {fmt(b.get('auroc_mean'))}→{fmt(m['auroc_mean'])}"
              f"  LM {fmt(b.get('lm_auroc_mean'))}→{fmt(m['lm_auroc_mean'])}   min σ: raw {fmt(b.get('auroc_min'))}→"
              f"{fmt(m['auroc_min'])}  LM {fmt(b.get('lm_auroc_min'))}→{fmt(m['lm_auroc_min'])}")

    bidx = {}
    for r in before or []:
        bidx[(r["set"], r["subset"], r["pair_id"], r["kind"], r["label"], " ".join(r["sentences"]))] = r

    def bef(rows):
        if not before:
            return None
        got = [bidx.get((r["set"], r["subset"], r["pair_id"], r["kind"], r["label"], " ".join(r["sentences"]))) for r in rows]
        return [g for g in got if g is not None] if all(g is not None for g in got) else None

    print(f"(before→after; LM = length-matched within ×{ratio} words; kinds: that kind's unsupported vs all supported)")
    for set_name in sorted({r["set"] for r in scores}):
        rows = [r for r in scores if r["set"] == set_name]
        print(f"{set_name}:")
        line("ALL", rows, bef(rows))
        for sub in sorted({r["subset"] for r in rows}):
            srows = [r for r in rows if r["subset"] == sub]
            if set_name != "faithdial":
                line(sub, srows, bef(srows))
        for kind in sorted({r["kind"] for r in rows if r["label"] == 0}):
            krows = [r for r in rows if r["label"] == 1 or r["kind"] == kind]
            if set_name == "faithdial":
                krows = [r for r in rows if r["kind"] == kind]
            line(f"kind {kind}", krows, bef(krows))
        if set_name == "summedits":
            for sub in ["ALL"] + sorted({r["subset"] for r in rows}):
                srows = rows if sub == "ALL" else [r for r in rows if r["subset"] == sub]
                a, b = sentence_level(srows, ratio), (sentence_level(bef(srows), ratio) if bef(srows) else {})
                p, pb = paired(srows), (paired(bef(srows)) if bef(srows) else (None, 0))
                print(f"  sentences {sub:28s} n={a['n']:5d}  raw {fmt(b.get('auroc'))}→{fmt(a['auroc'])}  "
                      f"LM {fmt(b.get('lm_auroc'))}→{fmt(a['lm_auroc'])}   paired with seed {fmt(pb[0])}→{fmt(p[0])} ({p[1]})")
        if set_name == "fib":
            for sub in sorted({r["subset"] for r in rows}):
                srows = [r for r in rows if r["subset"] == sub]
                for kind in ("fib", "fir"):
                    krows = [r for r in srows if r["pair_id"].endswith(":" + kind)]
                    p, pb = paired(krows), (paired(bef(krows)) if bef(krows) else (None, 0))
                    if p[1]:
                        print(f"  paired {sub}/{kind:24s} {fmt(pb[0])}→{fmt(p[0])} ({p[1]} pairs)")


def speed(items, weights: str, n: int) -> None:
    fd = [it for it in items if it.set == "faithdial"][:n]
    news = [it for it in items if it.set == "fib" and it.subset == "xsum"][: n // 2]
    for name, part in (("FaithDial", fd), ("XSum news", news)):
        if not part:
            continue
        rows = [(_sents(it.answer), _sents(it.context)) for it in part]
        k = sum(len(a) for a, _ in rows)
        m = NLIModel(weights_path=weights, use_embedding_cache=False)
        t0, c0 = time.perf_counter(), time.process_time()
        groundedness_nli_batch(rows, m, "all")
        cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
        m2 = NLIModel(weights_path=weights, embedding_cache_dir=tempfile.mkdtemp())
        groundedness_nli_batch(rows, m2, "all")
        t0, c0 = time.perf_counter(), time.process_time()
        groundedness_nli_batch(rows, m2, "all")
        warm, warm_cpu = time.perf_counter() - t0, time.process_time() - c0
        print(f"speed {name}: {k} answer sentences, {sum(len(c) for _, c in rows)} context sentences: "
              f"cold {k / cold:.1f} sentences/s ({1000 * cold_cpu / k:.1f} ms CPU each), "
              f"warm {k / warm:.1f} sentences/s ({1000 * warm_cpu / k:.1f} ms CPU each); "
              f"load average {' / '.join(f'{v:.2f}' for v in os.getloadavg())}")


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


def qa_check(model: NLIModel, ratio: float, n_pairs: int = 1000, seed: int = 1) -> None:
    from hcat_pipeline.metrics.nli.qa_pairs import documents_from_texts, qa_pairs

    pairs = qa_pairs(documents_from_texts(stdlib_docstring_texts()), n_pairs=n_pairs, seed=seed)
    y = np.array([p.label for p in pairs])
    sig = model.decision([p.premise for p in pairs], [p.hypothesis for p in pairs])["sigma"]
    n = np.array([len(p.hypothesis.split()) for p in pairs])
    print(f"QA-style check (stdlib docstrings, {len(pairs)} twins, seed {seed}): raw AUROC {auroc(y, sig):.3f}   "
          f"length-matched {length_matched_auroc(y, sig, n, ratio)['auroc']:.3f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="", help="head JSON (default: the packaged head)")
    ap.add_argument("--sets", default="faithdial,summedits,fib")
    ap.add_argument("--limit", type=int, default=0, help="only the first N held-out items per set (0: all)")
    ap.add_argument("--ratio", type=float, default=1.25, help="length-matching factor")
    ap.add_argument("--save", default="", help="write the per-item scores to this JSON")
    ap.add_argument("--load", default="", help="report from saved scores instead of scoring")
    ap.add_argument("--compare", default="", help="saved scores of another head (before), reported side by side")
    ap.add_argument("--speed-items", type=int, default=300, help="items for the speed measurement (0: skip)")
    ap.add_argument("--no-qa-check", action="store_true")
    ap.add_argument("--subsets", default="", help="only these subsets (comma-separated, e.g. news)")
    ap.add_argument("--llm-second-opinion", action="store_true",
                    help="the packaged LLM's second opinion on every borderline sentence (NLIModel.llm_second_opinion, no per-call cap)")
    args = ap.parse_args(argv)

    sets = tuple(s for s in args.sets.split(",") if s)
    items = load_sets(sets=sets, split="test")
    if args.limit:
        items = [it for s in sets for it in [x for x in items if x.set == s][: args.limit]]
    if args.subsets:
        items = [it for it in items if it.subset in args.subsets.split(",")]
    opts = {"llm_second_opinion": True, "llm_max_sentences": 10**9} if args.llm_second_opinion else {}
    model = NLIModel(weights_path=args.weights, **opts)
    t0 = time.perf_counter()
    model.embed(["The tower is in Paris."])  # load every model (a quotation alone would need none of them)
    model.contradiction(["The tower is in Paris."], ["The tower is in Rome."])
    model.decision([["The tower is in Paris."]], ["The tower is in Paris."])
    print(f"model load + first call: {time.perf_counter() - t0:.1f} s")
    if args.load:
        scores = json.loads(Path(args.load).read_text())
    else:
        scores = score_items(items, model)
        if args.save:
            Path(args.save).write_text(json.dumps(scores))
    before = json.loads(Path(args.compare).read_text()) if args.compare else None
    head = model.head()
    print(f"head: {len(head.feature_names)} features, ‖w‖ = {head.w_norm:.3f}, {head.info.get('n_train')} training pairs")
    report(scores, args.ratio, before)
    if not args.no_qa_check:
        qa_check(model, args.ratio)
    if args.speed_items:
        speed(items, args.weights, args.speed_items)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
