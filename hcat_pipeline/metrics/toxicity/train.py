"""Training of the toxicity head (``toxicity_head.npz``) from the public labelled sets in
``../shared/validation`` (split protocol in ``toxicity_data``). Pure: sentence embeddings come in
through ``embed``; scikit-learn fits, numpy arrays come out (no pickle).

* train split (60 %) + augmentation derived from its own sentences (below): every choice of
  hyperparameters is made by stratified group 5-fold cross-validation on it (AUROC). A word + char
  n-gram TF-IDF logistic model (``toxicity_tfidf``; hate vs not, trained without the counter-speech
  frames) is shared by every variant. Per embedding variant (``full`` = MiniLM ⊕ USE, ``minilm``) two
  embedding signals are fitted: a content logistic model (hate vs not, without the frames) and a
  frame LR (counter-speech frame vs anything else); the logistic stack over them, the TF-IDF logit,
  the profanity probability and the rule features is fitted on their out-of-fold values. The
  ``lexical`` variant stacks TF-IDF, profanity and rules;
* val split (15 %, original sentences only): Platt calibration of each stack, nothing else;
* test split (25 %): never seen here (``benchmarks/safety_toxicity.py`` reports on it).

Augmentation (documented; it teaches what the sets lack — they hold almost no counter-speech and
no harmless swearing): a train-split hate sentence wrapped in a counter-speech frame that quotes or
denounces it → label 0; a sentence with swearing added keeps its label (hate stays 1, non-hate
stays 0). Held-out frames (``*_HELDOUT``) are used only to build the synthetic pairs the benchmark
reports on the test split.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import date

import numpy as np

from hcat_pipeline.metrics.toxicity.data import Example, text_key
from hcat_pipeline.metrics.toxicity.encoder import PREFIX, FinetuneConfig, finetuned_logits, fit_finetuned
from hcat_pipeline.metrics.toxicity.model import (
    HEAD_FORMAT,
    embedding_matrix,
    embedding_signals,
    featurise,
    stack_inputs,
)
from hcat_pipeline.metrics.toxicity.rules import RULE_FEATURES
from hcat_pipeline.metrics.toxicity.tfidf import TFIDF_MODEL_KEY, fit_tfidf, predict_tfidf, tfidf_arrays, tfidf_logit

COUNTER_FRAMES = (
    'Saying "{q}" is hateful, and it has no place here.',
    'Someone wrote "{q}" on the forum, which is plain bigotry.',
    "It is a prejudiced lie that {c}.",
    "I am so tired of people claiming that {c}.",
    'Statements like "{q}" hurt real people and should be called out.',
    '"{q}" is exactly the kind of stereotype we need to challenge.',
    "My uncle said {c}, and I told him that was racist.",
    "No one should have to hear that {c}.",
    'We condemn the post that said "{q}".',
    "Please stop repeating the lie that {c}.",
    'The comment "{q}" was removed because it breaks the rules on hate speech.',
    "I can't believe anyone still thinks {c}.",
)
COUNTER_FRAMES_HELDOUT = (
    "It's sad that some people really believe {c}.",
    'A stranger told my friend "{q}" and everyone on the bus stood up for her.',
    "Anyone who says {c} is spreading prejudice.",
)
SWEAR_PREFIXES = ("Fuck, ", "Holy shit, ", "Damn, ", "What the hell, ", "Oh crap, ", "Bloody hell, ", "Fucking hell, ")
SWEAR_SUFFIXES = (" Fuck this.", " What a load of crap.", " Damn it.", " Shit.", " For fuck's sake.")
SWEAR_HELDOUT = ("Goddamn, ", "Shit, ", "Jesus fucking christ, ")
# Content model over the embedding: a logistic model. Grouped CV on the train split (implicit vs
# not_hate, out of fold): MiniLM LR C=1 0.765 / C=10 0.765; MiniLM ⊕ USE C=1 0.805 / C=10 0.802; stacked
# with the TF-IDF logit 0.831 (MiniLM) / 0.839 (⊕ USE). The earlier MLP (h256, minutes per fit on
# 2 shared cores) was not re-measured in the stack with TF-IDF. Head /3 reads the MiniLM layer features
# (every layer mean-pooled) instead of the sentence vector: content LR (all content rows) 0.814 → 0.847
# (C=10) for minilm, 0.842 → 0.852 (C=1) ⊕ USE; stack CV 0.882 → 0.896 / 0.896 → 0.899.
EMB_C_GRID = (1.0, 10.0)
FRAME_C_GRID = (0.1, 1.0, 10.0)
C_GRID = (0.01, 0.1, 1.0, 10.0)
_RULES = tuple(f for f in RULE_FEATURES if f != "slur_reclaimed")  # no training evidence for it
STACK_SETS = {
    "embedding": {
        "plain": ("emb_logit", "tfidf", "frame", "profanity", *_RULES),
        "interactions": ("emb_logit", "tfidf", "frame", "profanity", *_RULES, "frame*emb_logit", "denounce*emb_logit", "reported*emb_logit",
                         "negation*emb_logit", "frame*tfidf", "denounce*tfidf", "reported*tfidf"),
    },
    "lexical": {"plain": ("tfidf", "profanity", *_RULES), "interactions": ("tfidf", "profanity", *_RULES, "denounce*tfidf", "reported*tfidf")},
}
MAX_WORDS = 30


def _clause(text: str) -> str:
    t = text.strip().rstrip(".!?;: ").strip()
    return t[:1].lower() + t[1:] if len(t) > 1 and not t[1].isupper() and not t.startswith("I ") else t


def augment(examples: Sequence[Example], idx: Sequence[int], seed: int, counter_frames=COUNTER_FRAMES, prefixes=SWEAR_PREFIXES, suffixes=SWEAR_SUFFIXES) -> list[tuple[str, int, int, str]]:
    """(text, label, index of the source example, kind) for: each short hate sentence once in a
    counter-speech frame (label 0); a seeded third of all short sentences with swearing added
    (label unchanged)."""
    rng = random.Random(seed)
    out = []
    for i in idx:
        e = examples[i]
        if len(e.text.split()) > MAX_WORDS:
            continue
        q = e.text.strip().replace('"', "'")
        if e.label == 1:
            frame = rng.choice(counter_frames)
            out.append((frame.format(q=q, c=_clause(q)), 0, i, "aug_counter"))
        if (prefixes or suffixes) and rng.random() < 1 / 3:
            if prefixes and (rng.random() < 0.5 or not suffixes):
                t = rng.choice(prefixes) + _clause(q)
            else:
                t = q.rstrip() + ("" if q.rstrip()[-1:] in ".!?" else ".") + rng.choice(suffixes)
            out.append((t, e.label, i, "aug_swear_hate" if e.label else "aug_swear_clean"))
    return out


def _auroc(y: np.ndarray, s: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s)) if len(set(y.tolist())) == 2 else float("nan")


def _folds(y: np.ndarray, groups: np.ndarray, seed: int, k: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedGroupKFold

    return list(StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y, groups))


def _fit_lr(x: np.ndarray, y: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=5000).fit(x, y)


def _fit_stack(x: np.ndarray, y: np.ndarray, c: float):
    from sklearn.preprocessing import StandardScaler

    sc = StandardScaler().fit(x)
    scale = np.where(sc.scale_ > 0, sc.scale_, 1.0)
    lr = _fit_lr((x - sc.mean_) / scale, y, c)
    return sc.mean_, scale, lr.coef_[0], float(lr.intercept_[0])


def _stack_logit(x, mean, scale, coef, intercept) -> np.ndarray:
    return ((x - mean) / scale) @ coef + intercept


def _platt(logit: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    lr = _fit_lr(logit.reshape(-1, 1), y, 1e6)
    return float(lr.coef_[0, 0]), float(lr.intercept_[0])


def _platt_fused(z: np.ndarray, ft: np.ndarray, y: np.ndarray) -> tuple[float, tuple[float, float]]:
    """σ(a·z + c·ft + b) fitted on the val split, returned as the fine-tuned logit's weight in stack
    units (c / a) and the Platt pair (a, b) applied to z + (c / a)·ft."""
    lr = _fit_lr(np.column_stack([z, ft]), y, 1e6)
    a, c = (float(t) for t in lr.coef_[0])
    if a <= 0:
        raise ValueError(f"toxicity: the stack logit gets a non-positive weight ({a:.3g}) next to the fine-tuned logit on the val split")
    return c / a, (a, float(lr.intercept_[0]))


def _embedding_signals(x, y, content, is_counter, folds, seed, log) -> tuple[dict, dict, dict]:
    """Content LR (hate vs not, trained without the counter-speech frames) and frame LR (counter-
    speech frame vs anything else): C by grouped CV AUROC; out-of-fold signals for the stack; final
    models refitted on the whole train split."""
    report: dict = {"emb_cv_auroc": {}, "frame_cv_auroc": {}}
    embs = {}
    for c in EMB_C_GRID:
        oof = np.zeros(len(y))
        for a, b in folds:
            a = a[content[a]]
            oof[b] = _fit_lr(x[a], y[a], c).decision_function(x[b])
        embs[c] = (_auroc(y[content], oof[content]), oof)
        report["emb_cv_auroc"][str(c)] = embs[c][0]
        log(f"    content lr C={c}: CV AUROC {embs[c][0]:.4f}")
    ec = max(embs, key=lambda c: embs[c][0])
    frames = {}
    for c in FRAME_C_GRID:
        oof = np.zeros(len(y))
        for a, b in folds:
            oof[b] = _fit_lr(x[a], is_counter[a], c).predict_proba(x[b])[:, 1]
        frames[c] = (_auroc(is_counter, oof), oof)
        report["frame_cv_auroc"][str(c)] = frames[c][0]
        log(f"    frame lr C={c}: CV AUROC {frames[c][0]:.4f}")
    fc = max(frames, key=lambda c: frames[c][0])
    fr = _fit_lr(x, is_counter, fc)
    em = _fit_lr(x[content], y[content], ec)
    arrays = {"emb_coef": em.coef_[0].astype(np.float32), "emb_intercept": np.array(float(em.intercept_[0])),
              "frame_coef": fr.coef_[0].astype(np.float32), "frame_intercept": np.array(float(fr.intercept_[0]))}
    report |= {"emb_C": ec, "frame_C": fc}
    return arrays, {"emb_logit": embs[ec][1], "frame": frames[fc][1]}, report


def _tfidf_signal(texts, y, content, folds, log) -> tuple[dict, np.ndarray, dict]:
    """TF-IDF logistic model (vectorizers fitted inside each fold): out-of-fold logits for the
    stack, final model on every content row of the train split."""
    oof = np.zeros(len(y))
    for a, b in folds:
        a = a[content[a]]
        oof[b] = predict_tfidf(fit_tfidf([texts[i] for i in a], y[a]), [texts[i] for i in b])
    auc = _auroc(y[content], oof[content])
    log(f"  tfidf lr: CV AUROC {auc:.4f}")
    fitted = fit_tfidf([t for t, k in zip(texts, content) if k], y[content])
    return tfidf_arrays(fitted), oof, {"tfidf_cv_auroc": auc, "tfidf_features": int(fitted[1].coef_.shape[1])}


def training_rows(examples: Sequence[Example], tr_idx: np.ndarray, groups: np.ndarray, seed: int, neutral_texts: Sequence[str] = ()):
    """The head's training rows: (texts, labels, groups, kinds) of the train split, its augmentation
    (``augment``) and the neutral expository sentences (label 0, each its own group)."""
    aug = augment(examples, tr_idx, seed)
    texts = [examples[i].text for i in tr_idx] + [a[0] for a in aug]
    y = np.array([examples[i].label for i in tr_idx] + [a[1] for a in aug])
    grp = np.concatenate([np.asarray(groups)[tr_idx], np.asarray(groups)[[a[2] for a in aug]]])
    kinds = np.array([examples[i].kind for i in tr_idx] + [a[3] for a in aug])
    if neutral_texts:  # clean expository prose, each its own group (label 0)
        first = int(np.max(groups)) + 1
        texts += list(neutral_texts)
        y = np.concatenate([y, np.zeros(len(neutral_texts), dtype=y.dtype)])
        grp = np.concatenate([grp, first + np.arange(len(neutral_texts))])
        kinds = np.concatenate([kinds, np.full(len(neutral_texts), "aug_neutral_doc")])
    return texts, y, grp, kinds


def train_toxicity_head(
    examples: Sequence[Example],
    splits: Sequence[str],
    groups: np.ndarray,
    embed: Callable[[list[str]], np.ndarray],
    embed_aux: Callable[[list[str]], np.ndarray] | None = None,
    predict_prob: Callable[[list[str]], np.ndarray] | None = None,
    seed: int = 0,
    log: Callable[[str], None] = print,
    neutral_texts: Sequence[str] = (),
    finetune: FinetuneConfig | None = None,
) -> tuple[dict, dict]:
    """(head arrays for ``np.savez``, report). ``splits`` from ``toxicity.data.assign_splits``.
    Variants: ``minilm`` (``embed``), ``full`` (``embed`` + ``embed_aux``, when given), ``lexical``.
    ``finetune``: also fine-tune MiniLM (``toxicity_encoder``) on the same rows; its logit joins the
    embedding variants with a weight fitted on the val split with the calibration."""
    splits = np.asarray(splits)
    tr_idx = np.flatnonzero(splits == "train")
    va_idx = np.flatnonzero(splits == "val")
    texts, y, grp, kinds = training_rows(examples, tr_idx, groups, seed, neutral_texts)
    n_aug = int(sum(k.startswith("aug_") and k != "aug_neutral_doc" for k in kinds))
    content, is_counter = kinds != "aug_counter", (kinds == "aug_counter").astype(int)
    log(f"train: {len(tr_idx)} sentences + {n_aug} augmented + {len(neutral_texts)} neutral expository; val: {len(va_idx)}")
    f = featurise(texts, embed, predict_prob, embed_aux)
    fv = featurise([examples[i].text for i in va_idx], embed, predict_prob, embed_aux)
    yv = np.array([examples[i].label for i in va_idx])
    kinds_v = np.array([examples[i].kind for i in va_idx])
    implicit_v = (kinds_v == "implicit_hate") | (kinds_v == "not_hate")
    folds = _folds(y, grp, seed)
    ft_val = None
    if finetune is not None:
        log(f"  fine-tuned encoder ({finetune})")
        head_ft = fit_finetuned(f["normalised"], y, finetune, log)
        ft_val = finetuned_logits(fv["normalised"], head_ft)  # from the stored float16 arrays, as scoring will
        report_ft = {"config": asdict(finetune), "val_auroc": _auroc(yv, ft_val), "val_auroc_implicit": _auroc(yv[implicit_v], ft_val[implicit_v]),
                     "parameters": int(sum(a.size for k, a in head_ft.items() if k.startswith(f"{PREFIX}lora/")))}
        log(f"    fine-tuned alone: val AUROC {report_ft['val_auroc']:.4f} (implicit vs not_hate {report_ft['val_auroc_implicit']:.4f})")
    head, tfidf_oof, tfidf_rep = _tfidf_signal(f["normalised"], y, content, folds, log)
    tfidf_val = tfidf_logit(fv["normalised"], head)
    report: dict = {"variants": {}, "tfidf": tfidf_rep}
    if ft_val is not None:
        head |= head_ft
        report["finetuned"] = report_ft
    for v in ("full", "minilm", "lexical") if embed_aux is not None else ("minilm", "lexical"):
        log(f"  variant {v}")
        x = embedding_matrix(f, v)
        cols, rep = {"profanity": f["profanity"], "tfidf": tfidf_oof}, {}
        if x is not None:
            arrays, oof_cols, rep = _embedding_signals(x, y, content, is_counter, folds, seed, log)
            head |= {f"{v}_{k}": a for k, a in arrays.items()}
            cols |= oof_cols
        results = {}
        for vname, names in STACK_SETS["lexical" if x is None else "embedding"].items():
            xs = stack_inputs(cols, f["rules"], names)
            for c in C_GRID:
                oof = np.zeros(len(y))
                for a, b in folds:
                    oof[b] = _stack_logit(xs[b], *_fit_stack(xs[a], y[a], c))
                results[(vname, c)] = _auroc(y, oof)
        (vname, c) = max(results, key=results.get)
        names = STACK_SETS["lexical" if x is None else "embedding"][vname]
        mean, scale, coef, intercept = _fit_stack(stack_inputs(cols, f["rules"], names), y, c)
        head |= {f"{v}_names": np.array(names), f"{v}_mean": mean, f"{v}_scale": scale, f"{v}_coef": coef, f"{v}_intercept": np.array(intercept)}
        # Platt calibration on the val split (original sentences only)
        cols_v = {"profanity": fv["profanity"], "tfidf": tfidf_val} | ({} if x is None else embedding_signals(embedding_matrix(fv, v), head, v))
        zv = _stack_logit(stack_inputs(cols_v, fv["rules"], names), mean, scale, coef, intercept)
        rep |= {"stack": vname, "stack_C": c, "stack_cv_auroc": results[(vname, c)], "val_auroc": _auroc(yv, zv), "coef": dict(zip(names, np.round(coef, 4).tolist()))}
        if ft_val is not None and x is not None:  # the fine-tuned logit joins with a weight fitted with the calibration
            w, platt = _platt_fused(zv, ft_val, yv)
            zv = zv + w * ft_val
            head[f"{v}_ft_weight"] = np.array(w)
            rep |= {"ft_weight": w, "val_auroc_with_ft": _auroc(yv, zv)}
        else:
            platt = _platt(zv, yv)
        head[f"{v}_platt"] = np.array(platt)
        rep["val_auroc_implicit"] = _auroc(yv[implicit_v], zv[implicit_v])
        log(f"    stack {vname} C={c}: CV AUROC {results[(vname, c)]:.4f}; val AUROC {_auroc(yv, zv):.4f} (implicit vs not_hate {rep['val_auroc_implicit']:.4f})")
        report["variants"][v] = rep

    # category head: implicit-hate stage-2 class from the MiniLM embedding (train split, "other" left out)
    ci = [k for k, i in enumerate(tr_idx) if examples[i].implicit_class and examples[i].implicit_class != "other"]
    classes: list[str] = []
    head |= {"cat_coef": np.zeros((0, f["vecs"].shape[1]), np.float16), "cat_intercept": np.zeros(0, np.float32), "cat_names": np.array([], dtype=str)}
    if len({examples[tr_idx[k]].implicit_class for k in ci}) >= 2:
        cat = _fit_lr(f["vecs"][ci], [examples[tr_idx[k]].implicit_class for k in ci], 1.0)
        classes = [str(c) for c in cat.classes_]
        head |= {"cat_coef": cat.coef_.astype(np.float16), "cat_intercept": cat.intercept_.astype(np.float32), "cat_names": np.array(classes)}

    counts: dict = {s: {} for s in ("train", "val", "test")}
    for e, s in zip(examples, splits):
        counts[s][f"{e.source}:{e.kind}"] = counts[s].get(f"{e.source}:{e.kind}", 0) + 1
    digests = {s: split_digest([e for e, x in zip(examples, splits) if x == s]) for s in counts}
    report |= {
        "format": HEAD_FORMAT,
        "trained_on": str(date.today()),
        "seed": seed,
        "counts": counts,
        "augmented": {k: int((kinds == k).sum()) for k in ("aug_counter", "aug_swear_hate", "aug_swear_clean")},
        "split_digest": digests,
        "category_classes": classes,
    }
    head.pop(TFIDF_MODEL_KEY, None)  # the rebuilt vectorizers (an object, never saved)
    head["meta_json"] = np.array(json.dumps(report))
    return head, report


def split_digest(examples: Sequence[Example]) -> str:
    """sha256[:16] of the sorted text keys: shows whether a split was reproduced exactly."""
    return hashlib.sha256("\n".join(sorted(text_key(e.text) for e in examples)).encode()).hexdigest()[:16]
