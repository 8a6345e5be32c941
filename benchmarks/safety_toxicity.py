"""Held-out evaluation of the calibrated ``toxicity`` score (metrics/toxicity/model.py) against the old
profanity score, on the split the head never saw, plus the hand-written functional table, speed and
peak RSS.

    nice -n 19 python benchmarks/safety_toxicity.py [--split test|val] [--data ../shared/validation]

* AUROC per set: implicit-hate (implicit vs not_hate overall and per stage-2 class; explicit vs
  not_hate), ToxiGen demonstrations (hate vs neutral overall and per category); Brier / ECE;
* synthetic held-out pairs: each held-out hate sentence vs the same sentence inside a held-out
  counter-speech frame, and clean sentences with held-out swearing added vs the hate sentences;
* the functional table (hcat_pipeline_tests/toxicity_functional.py): mean per category and the
  share of (hate, other) pairs where the hate sentence scores higher;
* speed (sentences/s, embeddings computed, no cache) per head variant and peak RSS;
* the default campaign's answers (``data/warehouse/rag_responses``, Python-docs RAG answers, none
  hateful): per answer sentence max / p95 and the number scored ≥ 0.5 (expected: none).

The split is recomputed (toxicity_data) and checked against the digest stored in the head.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def auroc(y, s) -> str:
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y)
    return f"{roc_auc_score(y, s):.3f}" if len(set(y.tolist())) == 2 else "  -  "


def ece(y, p, bins: int = 10) -> float:
    y, p = np.asarray(y, float), np.asarray(p, float)
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(p, edges) - 1, 0, bins - 1)
    return float(sum(abs(p[idx == b].mean() - y[idx == b].mean()) * (idx == b).mean() for b in range(bins) if (idx == b).any()))


def pair_share(hi, lo) -> float:
    hi, lo = np.asarray(hi)[:, None], np.asarray(lo)[None, :]
    return float(((hi > lo) + 0.5 * (hi == lo)).mean())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "validation")
    ap.add_argument("--split", default="test", choices=("test", "val"))
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--head", type=Path, default=None, help="a head npz to read instead of the shipped one (a candidate)")
    ap.add_argument("--speed-only", action="store_true", help="only speed and peak RSS (a clean process: scorer + models, no data sets)")
    args = ap.parse_args()
    if args.speed_only:
        return speed(args.data, args.head)

    from hcat_pipeline.metrics.toxicity.data import head_splits, load_all
    from hcat_pipeline.metrics.toxicity.model import load_toxicity_head, sentence_toxicity
    from hcat_pipeline.metrics.toxicity.train import COUNTER_FRAMES_HELDOUT, SWEAR_HELDOUT, augment, split_digest
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.multilingual import MultilingualEncoder
    from hcat_pipeline_tests.toxicity_functional import FUNCTIONAL, HATE, NOT_HATE

    head = load_toxicity_head(args.head) if args.head else load_toxicity_head()
    emb = EmbeddingModel(**({"cache_dir": args.cache_dir} if args.cache_dir else {}))
    examples, _ = load_all(args.data)
    splits = head_splits(examples, emb.embed)
    idx = [i for i, s in enumerate(splits) if s == args.split]
    digest = split_digest([examples[i] for i in idx])
    ok = digest == head["meta"]["split_digest"][args.split]
    print(f"{args.split} split: {len(idx)} sentences; digest {'matches the head' if ok else 'DIFFERS from the head (split not reproduced)'}")

    ex = [examples[i] for i in idx]
    texts = [e.text for e in ex]
    has_full = "full" in head["meta"]["variants"]
    mini_rows = sentence_toxicity(texts, emb.layer_features, head=head)
    aux = {"embed_aux": MultilingualEncoder().encode} if has_full else {}
    full = sentence_toxicity(texts, emb.layer_features, head=head, **aux) if has_full else mini_rows
    new = np.array([r["toxicity"] for r in full])  # "full" column = minilm when the head has no full variant
    mini = np.array([r["toxicity"] for r in mini_rows])
    lexs = np.array([r["toxicity"] for r in sentence_toxicity(texts, None, head=head)])
    prof = np.array([r["profanity"] for r in full])
    y = np.array([e.label for e in ex])

    def row(name, m, yy=None):
        m = np.asarray(m)
        yy = y[m] if yy is None else yy
        print(f"  {name:36s} {int(yy.sum()):5d}/{int((1 - yy).sum()):5d}   {auroc(yy, new[m])}   {auroc(yy, mini[m])}   {auroc(yy, lexs[m])}   {auroc(yy, prof[m])}")

    src = np.array([e.source for e in ex])
    kind = np.array([e.kind for e in ex])
    ic = np.array([e.implicit_class for e in ex])
    print(f"\nAUROC, held-out {args.split} split                    pos/  neg   full    minilm  lexical profanity(old)")
    ih = src == "implicit-hate"
    row("implicit-hate: implicit vs not_hate", ih & (kind != "explicit_hate"))
    for c in sorted(set(ic) - {""}):
        row(f"  implicit[{c}] vs not_hate", ih & ((ic == c) | (kind == "not_hate")))
    row("  implicit[no stage-2 class]", ih & (((kind == "implicit_hate") & (ic == "")) | (kind == "not_hate")))
    row("implicit-hate: explicit vs not_hate", ih & (kind != "implicit_hate"))
    row("implicit-hate: any hate vs not_hate", ih)
    tg = src == "toxigen"
    row("toxigen: hate vs neutral", tg)
    cat = np.array([e.group.split(":")[0] for e in ex])
    for c in sorted(set(cat[tg])):
        row(f"  toxigen[{c}]", tg & (cat == c))
    print(f"  calibration (all {len(y)}): Brier {np.mean((new - y) ** 2):.3f}, ECE {ece(y, new):.3f}; "
          f"at 0.5: hate recall {np.mean(new[y == 1] >= 0.5):.3f}, false-positive rate {np.mean(new[y == 0] >= 0.5):.3f}")

    # synthetic held-out pairs (frames never used in training)
    hate_idx = [k for k, e in enumerate(ex) if e.label == 1 and len(e.text.split()) <= 30]
    rng = random.Random(args.seed)
    sample = rng.sample(hate_idx, min(400, len(hate_idx)))
    counter = augment(ex, sample, args.seed, counter_frames=COUNTER_FRAMES_HELDOUT, prefixes=(), suffixes=())
    counter = [a for a in counter if a[3] == "aug_counter"]
    clean_idx = rng.sample([k for k, e in enumerate(ex) if e.label == 0 and len(e.text.split()) <= 30], 400)
    swear = [(rng.choice(SWEAR_HELDOUT) + ex[k].text, k) for k in clean_idx]
    sc = [r["toxicity"] for r in sentence_toxicity([a[0] for a in counter] + [s for s, _ in swear], emb.layer_features, head=head, **aux)]
    sc_c, sc_s = np.array(sc[: len(counter)]), np.array(sc[len(counter) :])
    src_c = np.array([new[a[2]] for a in counter])
    print(f"\nsynthetic held-out pairs ({args.split}): hate > same hate in a counter-speech frame in {np.mean(src_c > sc_c):.1%} of {len(counter)}; "
          f"AUROC hate vs clean+swearing {auroc(np.r_[np.ones(len(hate_idx)), np.zeros(len(sc_s))], np.r_[new[hate_idx], sc_s])} "
          f"(profanity alone {auroc(np.r_[np.ones(len(hate_idx)), np.zeros(len(sc_s))], np.r_[prof[hate_idx], [r['profanity'] for r in sentence_toxicity([s for s, _ in swear], None, head=head)]])})")

    # functional table
    print("\nfunctional table (hand-written)   n   mean toxicity  mean profanity  hate>this (toxicity / profanity)")
    res = {c: sentence_toxicity(s, emb.layer_features, head=head, **aux) for c, s in FUNCTIONAL.items()}
    hate_t = np.concatenate([[r["toxicity"] for r in res[c]] for c in HATE])
    hate_p = np.concatenate([[r["profanity"] for r in res[c]] for c in HATE])
    for c, rs in res.items():
        t, p = [r["toxicity"] for r in rs], [r["profanity"] for r in rs]
        share = f"{pair_share(hate_t, t):.1%} / {pair_share(hate_p, p):.1%}" if c not in HATE else ""
        print(f"  {c:30s} {len(rs):3d}   {np.mean(t):.3f}          {np.mean(p):.3f}           {share}")
    for c in HATE + NOT_HATE + ("reclaimed",):
        for r in res[c]:
            print(f"    {c:9s} {r['toxicity']:.3f} {r['signal']:17s} {r['category']:24s} {r['sentence']}")

    operational(emb, head, aux, args.seed)
    reclaimed(emb, head, aux, args.seed)
    warehouse(emb, head, aux)
    print("\n(speed and peak RSS: run again with --speed-only, a process without the data sets)")


def operational(emb, head, aux: dict, seed: int) -> None:
    """Clean prose with violent words from the templates the head never saw (toxicity_operational;
    the held-out ids and seed the head recorded): the share scored ≥ 0.5 is a false-positive rate on
    technical / game / finance / sports prose, overall and per template."""
    from hcat_pipeline.metrics.toxicity.operational import heldout_templates, operational_templates

    recorded = head["meta"].get("operational_negatives")
    if recorded is None:
        print("\noperational prose: the head records no operational negatives (trained without them); "
              f"held-out templates of seed {seed} shown")
    seed = head["meta"].get("seed", seed) if recorded else seed
    if recorded and sorted(heldout_templates(seed)) != recorded["heldout_templates"]:
        raise SystemExit(f"held-out templates {sorted(heldout_templates(seed))} differ from the head's {recorded['heldout_templates']}")
    _template_false_positives(f"operational prose, seed {seed}", operational_templates(seed=seed, split="heldout", with_ids=True),
                              emb, head, aux, top=3)  # fmt: skip


def reclaimed(emb, head, aux: dict, seed: int) -> None:
    """Reclaimed slurs in in-group frames from the held-out templates (toxicity_reclaimed): the share
    scored ≥ 0.5 flags non-hateful in-group speech."""
    from hcat_pipeline.metrics.toxicity.reclaimed import reclaimed_templates

    seed = head["meta"].get("seed", seed)
    trained = "the head trained on the other templates" if "reclaimed_negatives" in head["meta"] else "the head trained on none of them"
    _template_false_positives(f"reclaimed slurs in in-group frames; {trained}", reclaimed_templates(seed=seed, split="heldout", with_ids=True),
                              emb, head, aux, top=0)  # fmt: skip


def _template_false_positives(title: str, pairs: list[tuple[str, str]], emb, head, aux: dict, top: int) -> None:
    """Share of (template id, sentence) pairs scored ≥ 0.5 per head variant, overall and per template."""
    from hcat_pipeline.metrics.toxicity.model import sentence_toxicity

    ids, sents = np.array([p[0] for p in pairs]), [p[1] for p in pairs]
    print(f"\n{title}: held-out templates {sorted(set(ids.tolist()))} (n = {len(sents)})")
    for name, kw in (("minilm", {}), ("full", aux)) if aux else (("minilm", {}),):
        rows = sentence_toxicity(sents, emb.layer_features, head=head, **kw)
        t = np.array([r["toxicity"] for r in rows])
        per = ", ".join(f"{tid} {int((t[ids == tid] >= 0.5).sum())}/{int((ids == tid).sum())}" for tid in sorted(set(ids.tolist())))
        print(f"  {name}: ≥ 0.5: {int((t >= 0.5).sum())} ({(t >= 0.5).mean():.1%}), mean {t.mean():.3f}, max {t.max():.3f}; per template: {per}")
        for r in sorted(rows, key=lambda r: -r["toxicity"])[:top]:
            print(f"    {r['toxicity']:.3f} {r['signal']:17s} {r['sentence'][:110]}")


def warehouse(emb, head, aux: dict) -> None:
    """Every answer sentence of the stored campaign runs (``data/warehouse/rag_responses``): benign
    technical prose that must stay below 0.5."""
    import polars as pl

    from hcat_pipeline.corpus.chunking import split_sentences
    from hcat_pipeline.metrics.toxicity.model import sentence_toxicity

    files = sorted((ROOT / "data" / "warehouse" / "rag_responses").glob("*/*.parquet"))
    if not files:
        print("\nwarehouse: no rag_responses tables under data/warehouse (run a campaign first)")
        return
    answers = pl.concat([pl.read_parquet(f, columns=["answer"]) for f in files])["answer"].drop_nulls().to_list()
    sents = sorted({s for a in answers for s in split_sentences(a) if s.strip()})
    for name, kw in (("minilm", {}), ("full", aux)) if aux else (("minilm", {}),):
        rows = sentence_toxicity(sents, emb.layer_features, head=head, **kw)
        t = np.array([r["toxicity"] for r in rows])
        top = sorted(rows, key=lambda r: -r["toxicity"])[:3]
        print(f"\nwarehouse rag_responses ({len(files)} tables, {len(answers)} answers, {len(sents)} unique sentences), {name}: "
              f"max {t.max():.3f}, p95 {np.percentile(t, 95):.3f}, ≥ 0.5: {int((t >= 0.5).sum())}")
        for r in top:
            print(f"    {r['toxicity']:.3f} {r['signal']:17s} {r['sentence'][:110]}")


def speed(data: Path, head_path: Path | None = None, n: int = 2000) -> None:
    """Sentences/s per head variant on n ToxiGen / implicit-hate sentences (embeddings computed, not
    cached; models warmed up first), then the process's peak RSS."""
    from hcat_pipeline.metrics.toxicity.data import load_implicit_hate
    from hcat_pipeline.metrics.toxicity.model import load_toxicity_head, sentence_toxicity
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.multilingual import MultilingualEncoder

    sents = [e.text for e in load_implicit_hate(data / "implicit-hate")][-n:]
    head = load_toxicity_head(head_path) if head_path else load_toxicity_head()
    emb = EmbeddingModel(use_cache=False)
    sentence_toxicity(["warm up"], emb.layer_features, head=head)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    variants = [("minilm", {"embed": emb.layer_features}), ("lexical", {})]
    if "full" in head["meta"]["variants"]:
        variants.insert(0, ("full (MiniLM + USE)", {"embed": emb.layer_features, "embed_aux": MultilingualEncoder().encode}))
    for name, kw in variants:
        t0, c0 = time.perf_counter(), time.process_time()
        sentence_toxicity(sents, head=head, **kw)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(f"speed {name}: {len(sents) / wall:,.0f} sentences/s wall, {len(sents) / cpu:,.0f} per CPU second "
              f"({len(sents)} sentences, one batch; load average {os.getloadavg()[0]:.1f})")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB (after loading and warm-up: {rss0:,.0f} MiB)")

if __name__ == "__main__":
    main()
