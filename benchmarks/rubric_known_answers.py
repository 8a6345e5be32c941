"""Issue 33's rubric dimensions on cases whose answer is known: prints one block of figures per dimension.

    python benchmarks/rubric_known_answers.py [--per-label 150] [--seed 0]

* citation precision (golden-eval §10.3) on the FaithDial audit (human labels, ``../shared/validation``): responses
  labelled *entailment* citing their own knowledge passage [1] (right), the same responses citing another dialogue's
  passage (wrong), and responses labelled *hallucination* citing their own passage (unsupported) — the share of
  citations judged relevant per group and the AUROC right-vs-wrong and right-vs-unsupported (the packaged NLI head);
  the ``dev`` split only (``judge.data.split_of``);
* contextual PII (HCAT §4): recall on generated valid identifiers and transaction phrases, false alarms on near misses
  (a wrong IBAN check, a non-Luhn card) and on every sentence of the embedded default corpus and the dev corpus
  (ordinary documentation: any hit there is a false alarm);
* format checks (§3.2.1, §3.2.4): the verdict on hand-written compliant / non-compliant answers per kind;
* stated confidence (§3.2.3): the value read from hand-written statements, and the Brier / ECE of a calibrated and an
  over-confident simulated system;
* harm categories (§3.2.6): the AILuminate categories ten jailbreak cases cover, for seeds 0-9.

Figures only; nothing is tuned here. Run alone (it loads the NLI head and the embedding model).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent


def auroc(pos: list[float], neg: list[float]) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score([1] * len(pos) + [0] * len(neg), pos + neg))


def citations(per_label: int, seed: int) -> None:
    from hcat_pipeline.judge.data import faithdial_items
    from hcat_pipeline.metrics.api import score
    from hcat_pipeline.resources.nli import NLIModel

    items = [i for i in faithdial_items() if i.split == "dev"]
    rng = random.Random(seed)
    pos, neg = [i for i in items if i.label == 1], [i for i in items if i.label == 0]
    per_label = min(per_label, len(pos), len(neg))  # the dev split holds 70 entailment-labelled responses
    good, bad = rng.sample(pos, per_label), rng.sample(neg, per_label)
    others = [i.contexts[0] for i in rng.sample(items, per_label)]
    rows = ([(f"{i.answer} [1]", [i.contexts[0]], "right") for i in good]
            + [(f"{i.answer} [1]", [o if o != i.contexts[0] else others[0]], "wrong") for i, o in zip(good, others, strict=True)]
            + [(f"{i.answer} [1]", [i.contexts[0]], "unsupported") for i in bad])  # fmt: skip
    frame = pl.DataFrame({"query": ["-"] * len(rows), "contexts": [c for _, c, _ in rows], "answer": [a for a, _, _ in rows],
                          "task": ["dialogue"] * len(rows)})  # FaithDial responses: the dialogue head, as groundedness_nli
    t0 = time.perf_counter()
    out = score(frame, ["citation_precision", "citation_recall"], nli=NLIModel(), record_info=False)
    secs = time.perf_counter() - t0
    groups = [g for _, _, g in rows]
    prec = {g: [p for p, gg in zip(out["citation_precision"].to_list(), groups, strict=True) if gg == g and p is not None] for g in set(groups)}
    print(f"citation precision on FaithDial-audit dev ({secs:.0f} s, NLI head):")
    for g in ("right", "wrong", "unsupported"):
        print(f"  {g:<12} n={len(prec[g]):>4}  share of citations judged relevant {np.mean(prec[g]):.3f}")
    print(f"  AUROC right vs wrong passage {auroc(prec['right'], prec['wrong']):.3f}; right vs unsupported (hallucination) "
          f"{auroc(prec['right'], prec['unsupported']):.3f}")


def contextual_pii(seed: int) -> None:
    from hcat_pipeline.common.contextual_pii import contextual_entities
    from hcat_pipeline.common.sentences import sentences
    from hcat_pipeline.gates.canaries import iban, luhn_card

    rng = random.Random(seed)
    positives = []
    for _ in range(100):
        positives += [("IBAN_CODE", f"Please pay into IBAN {iban(rng)} by Friday."),
                      ("CREDIT_CARD", f"The card {luhn_card(rng)} was blocked."),
                      ("UK_SORT_CODE", f"Her sort code is {rng.randrange(100):02d}-{rng.randrange(100):02d}-{rng.randrange(100):02d}."),
                      ("ACCOUNT_NUMBER", f"Account number {rng.randrange(10**7, 10**8)} is overdrawn."),
                      ("TRANSACTION", f"You transferred £{rng.randrange(10, 5000)}.{rng.randrange(100):02d} to J. Smith on Monday.")]
    found = sum(any(e["type"] == kind for e in contextual_entities(text)) for kind, text in positives)
    near = []
    for _ in range(100):
        good = iban(rng)
        near += [f"Reference {good[:-1]}{(int(good[-1]) + 1) % 10} is not a real IBAN.",
                 f"Order {luhn_card(rng)[:-1]}{rng.choice('0123456789')} shipped."]
    near_hits = sum(bool(contextual_entities(t)) for t in near)
    from pydoc_data.topics import topics  # the embedded default corpus (corpus.ingest.load_pydoc_topics)

    texts = list(topics.values()) + [p.read_text() for p in sorted((HERE / "data/case_validity/corpus").glob("*.md"))]
    sents = [s for t in texts for s in sentences(t)]
    hits = [(s, e["type"]) for s in sents for e in contextual_entities(s)]
    print("contextual PII (common.contextual_pii):")
    print(f"  recall on {len(positives)} generated identifiers / transactions: {found / len(positives):.3f}")
    print(f"  hits on {len(near)} near misses (wrong IBAN check, card-length order numbers): {near_hits} "
          "(order numbers that happen to pass Luhn, 1 in 10, are cards by construction)")
    print(f"  hits on {len(sents)} sentences of ordinary documentation (default corpus + dev corpus): {len(hits)}")
    for s, kind in hits[:5]:
        print(f"    {kind}: {s[:100]}")


FORMAT_ANSWERS = {  # kind → (compliant answers, non-compliant answers)
    "json_schema": (['{"answer": "Monthly.", "confidence": "high"}', '```json\n{"answer": "Monthly.", "confidence": "low"}\n```'],
                    ['{"answer": "Monthly."}', 'Monthly.', '{"answer": "", "confidence": "high"}', '{"answer": "x", "confidence": "sure"}']),
    "list_items": (["- Monthly.\n- On the first business day.", "Two points:\n1. Monthly\n2. First business day"],
                   ["Monthly, on the first business day.", "- a\n- b\n- c\n- d", "- a\nand then more text"]),
    "max_words": (["Interest is paid monthly.", " ".join(["word"] * 25)], [" ".join(["word"] * 26), " ".join(["word"] * 60)]),
    "must_include": (['Monthly. This is not financial advice.', 'Monthly. "This is not financial advice."'],
                     ['This is not financial advice. Monthly.', 'Monthly.']),
}


def formats() -> None:
    from hcat_pipeline.behaviour.formats import check
    from hcat_pipeline.golden.formats import format_argument

    print("format checks (behaviour.formats) on hand-written answers:")
    for kind, (good, bad) in FORMAT_ANSWERS.items():
        arg = format_argument(kind, 0)
        ok = sum(check(kind, arg, a)[0] for a in good) + sum(not check(kind, arg, a)[0] for a in bad)
        print(f"  {kind:<13} {ok}/{len(good) + len(bad)} verdicts as labelled")
    langs = {"de": "Die Zinsen werden monatlich am ersten Geschäftstag gezahlt.", "fr": "Les intérêts sont versés chaque mois.",
             "es": "Los intereses se pagan cada mes.", "en": "Interest is paid monthly."}
    ok = sum(check("language", code, text)[0] for code, text in langs.items() if code != "en") + (not check("language", "de", langs["en"])[0])
    print(f"  language      {ok}/4 verdicts as labelled")


def stated_confidence(seed: int) -> None:
    from hcat_pipeline.calibration.metrics import expected_calibration_error
    from hcat_pipeline.metrics.confidence import stated_confidence as read

    labelled = [("Confidence: 80%. Monthly.", 0.8), ("I am 90% sure it is monthly.", 0.9), ('{"answer": "x", "confidence": "medium"}', 0.6),
                ("I'm fairly sure it is monthly.", 0.7), ("I think it is monthly.", 0.6), ("I'm not sure, maybe monthly.", 0.3),
                ("It is monthly.", None), ("Rates are likely to rise.", None), ("I don't know based on the provided context.", None)]
    ok = sum(read(t)[0] == v for t, v in labelled)
    rng = np.random.default_rng(seed)
    conf = rng.choice([0.3, 0.6, 0.9], size=400)
    right = (rng.random(400) < conf).astype(int)
    print("stated confidence (metrics.confidence, calibration.stated):")
    print(f"  read as labelled: {ok}/{len(labelled)}")
    print(f"  simulated calibrated system (n=400): Brier {np.mean((conf - right) ** 2):.3f}, ECE {expected_calibration_error(conf, right):.3f}; "
          f"the same answers stated at 0.95: Brier {np.mean((0.95 - right) ** 2):.3f}, ECE {expected_calibration_error(np.full(400, 0.95), right):.3f}")


def harm() -> None:
    from hcat_pipeline.golden.cases import new_case
    from hcat_pipeline.golden.categories import jailbreak_cases
    from hcat_pipeline.golden.harm import harm_category_of

    covered = [len({harm_category_of(c["tags"]) for c in jailbreak_cases(10, s, new_case)}) for s in range(10)]
    print(f"harm categories: AILuminate categories covered by ten jailbreak cases, seeds 0-9: {covered}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-label", type=int, default=70)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    formats()
    stated_confidence(args.seed)
    harm()
    contextual_pii(args.seed)
    citations(args.per_label, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
