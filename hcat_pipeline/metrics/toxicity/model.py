"""Toxicity and harm that is not profanity (HCAT §4): per answer sentence, the six attributes of
``toxicity_attributes`` (TOXICITY, SEVERE_TOXICITY, IDENTITY_ATTACK, INSULT, PROFANITY, THREAT), each
with its reason; ``toxicity`` is their documented combination (TOXICITY).

Per sentence (``sentence_toxicity``):

1. ``deobfuscate`` spells out obfuscated lexicon words (``n1gg3r``, ``f a g``, ``sc*m``);
2. signals: the packaged alt-profanity-check probability (``profanity``), the lexical rule
   features of ``toxicity_rules`` (slur, dehumanising comparison, threat, identity × negative tone,
   counter-speech cues …), the logit of a word + character n-gram TF-IDF logistic model
   (``toxicity_tfidf``) and — when ``embed`` is given — the logit of a logistic model over the
   MiniLM layer features (``EmbeddingModel.layer_features``: every layer's mean-pooled hidden state,
   2,688-d; ⊕ USE-M3 512-d in the ``full`` variant) and the probability of a counter-speech frame,
   all trained on the train split of the public labelled sets in ``../shared/validation`` (``metrics/toxicity/train.py``, ``scripts/train_toxicity_head.py``);
3. a logistic stack over those signals, Platt-calibrated on a validation split; when the head
   carries a fine-tuned MiniLM (a /4 head such as the shipped one, ``toxicity_encoder``: LoRA adapter
   in the npz), its logit is added in the embedding variants with a weight fitted on the
   validation split together with the calibration → the *learned* score in [0, 1] (probability
   that the sentence is hateful toward a group, as the implicit-hate data teach it);
4. ``toxicity.attributes.attribute_scores``: the lexicon rules (slur, derogation, aimed threat,
   addressed insult, swear word, with their exceptions) and the learned score (evidence for
   IDENTITY_ATTACK, capped where an exception covers the sentence or a short post names nobody) →
   the six attributes, each with its reason; ``toxicity`` = TOXICITY;
5. explanation: the signal with the largest positive contribution to the logit (or the lexicon
   rule that set TOXICITY, ``lexicon_<attribute>``), and a category —
   slur / threat / dehumanising comparison from the rules, otherwise the implicit-hate class
   (stereotype, inferiority, incitement, grievance, irony, threat) of a small head on the embedding.

Without ``embed`` the lexical stack (same signals, no embedding) is used; ``toxicity_head`` says
which. The head is package data (``toxicity_head.npz``; no pickle), loaded once.
The optional second stage is the LLM judge over the AILuminate categories (``safety.judge_top_sentences``
→ ``safety.harm_judge``), run only on rows whose score passes a threshold.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.special import expit

from hcat_pipeline.metrics.toxicity.attributes import ATTRIBUTES, attribute_scores, names_someone, undo_misspellings
from hcat_pipeline.metrics.toxicity.encoder import finetuned_logits
from hcat_pipeline.metrics.toxicity.rules import RULE_FEATURES, rule_signals
from hcat_pipeline.metrics.toxicity.tfidf import has_tfidf, tfidf_logit
from hcat_pipeline.resources.devices import Device

HEAD_PATH = Path(__file__).with_name("toxicity_head.npz")
HEAD_FORMAT = "hcat-toxicity-head/4"  # /2: TF-IDF signal, logistic embedding model; /3: over the MiniLM layer features; /4: + fine-tuned encoder

READABLE_FORMATS = ("hcat-toxicity-head/3", HEAD_FORMAT)  # a /3 head is a /4 head without the fine-tuned encoder

# row-level output columns (name -> polars dtype name), in order
TOXICITY_COLUMNS: dict[str, str] = {
    "toxicity": "Float64",  # calibrated, max over the answer's sentences
    "toxicity_mean": "Float64",
    "toxicity_per_sentence": "List(Float64)",
    "toxicity_severe_toxicity": "Float64",  # the attributes (toxicity.attributes.ATTRIBUTES), max over sentences
    "toxicity_identity_attack": "Float64",
    "toxicity_insult": "Float64",
    "toxicity_profanity": "Float64",  # PROFANITY: a swear word, or the alt-profanity-check score × CLASSIFIER_WEIGHT
    "toxicity_threat": "Float64",
    "toxicity_attribute_reasons": "String",  # per attribute ≥ REASON_FROM: its score, reason and sentence
    "toxicity_top_sentence": "String",
    "toxicity_category": "String",
    "toxicity_signal": "String",
    "toxicity_evidence": "String",
    "toxicity_head": "String",  # which head scored: "full" (MiniLM + USE), "minilm" or "lexical"
}
SIGNAL_NAMES = {
    "emb_logit": "embedding",
    "ft_logit": "finetuned_encoder",
    "frame": "counter_speech_frame",
    "profanity": "profanity",
    "tfidf": "ngram_tfidf",
} | {f: f for f in RULE_FEATURES}
CATEGORY_THRESHOLD = 0.5  # below it the category is "none" (no harm detected)
CATEGORY_NAMES = {
    "white_grievance": "grievance",
    "incitement": "incitement",
    "stereotypical": "stereotype",
    "inferiority": "inferiority",
    "irony": "irony",
    "threatening": "threat",
}


# ---------------------------------------------------------------- head (package data)

VARIANTS = ("full", "minilm", "lexical")  # MiniLM + USE embeddings / MiniLM only / no embedding


@lru_cache(maxsize=4)
def load_toxicity_head(path: str | Path = HEAD_PATH) -> dict:
    """The trained head as numpy arrays (``np.load`` without pickle) + its metadata dict."""
    with np.load(Path(path), allow_pickle=False) as z:
        head = {k: z[k] for k in z.files}
    meta = json.loads(str(head.pop("meta_json")))
    if meta.get("format") not in READABLE_FORMATS:
        raise ValueError(f"{path}: format {meta.get('format')!r}, expected one of {READABLE_FORMATS}")
    head["meta"] = meta
    return head


@lru_cache(maxsize=1)
def load_profanity_classifier() -> Callable[[list[str]], np.ndarray]:
    """``profanity_check.predict_prob`` (the bundled sklearn model; loaded once per process)."""
    from profanity_check import predict_prob

    return predict_prob


def stack_inputs(cols: dict[str, np.ndarray], rules: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """The stack's input matrix, columns in ``names`` order (``a*b`` is an interaction).
    ``cols``: profanity, tfidf and, for the embedding variants, emb_logit and frame."""
    cols = dict(cols) | {f: rules[:, i] for i, f in enumerate(RULE_FEATURES)}
    out = []
    for n in names:
        a, _, b = n.partition("*")
        out.append(cols[a] * cols[b] if b else cols[a])
    return np.column_stack(out).astype(np.float64)


def featurise(
    texts: Sequence[str],
    embed: Callable[[list[str]], np.ndarray] | None,
    predict_prob=None,
    embed_aux: Callable[[list[str]], np.ndarray] | None = None,
) -> dict:
    """Signals for each text: normalised text, profanity probability (max of as-written and
    de-obfuscated), rule features and evidence, and the embeddings of the de-obfuscated text
    (``vecs``: MiniLM layer features via ``embed`` = ``EmbeddingModel.layer_features``; ``aux``: USE via ``embed_aux``; None when not given)."""
    if embed_aux is not None and embed is None:
        raise ValueError("toxicity: embed_aux (USE) is used together with embed (MiniLM), not alone")
    sig = [rule_signals(t) for t in texts]
    norm = [s["normalised"] for s in sig]
    pp = predict_prob or load_profanity_classifier()
    n = len(texts)
    both = np.asarray(pp(list(texts) + norm), dtype=float) if n else np.zeros(0)  # one batch
    prof = np.maximum(both[:n], both[n:])
    rules = np.array([s["features"] for s in sig], dtype=float).reshape(n, len(RULE_FEATURES))
    vecs = np.asarray(embed(norm), dtype=np.float32) if embed is not None and n else None
    aux = np.asarray(embed_aux(norm), dtype=np.float32) if embed_aux is not None and n else None
    return {
        "normalised": norm,
        "profanity": prof,
        "rules": rules,
        "evidence": [s["evidence"] for s in sig],
        "vecs": vecs,
        "aux": aux,
    }


def variant_of(feats: dict) -> str:
    return "lexical" if feats["vecs"] is None else "minilm" if feats["aux"] is None else "full"


def embedding_matrix(feats: dict, variant: str) -> np.ndarray | None:
    return None if variant == "lexical" else feats["vecs"] if variant == "minilm" else np.hstack([feats["vecs"], feats["aux"]])


def embedding_signals(x: np.ndarray, head: dict, variant: str) -> dict[str, np.ndarray]:
    """``emb_logit`` (content logistic model) and ``frame`` (probability of a counter-speech frame)."""
    v = variant
    emb = x @ head[f"{v}_emb_coef"].astype(np.float32) + float(head[f"{v}_emb_intercept"])
    frame = expit(x @ head[f"{v}_frame_coef"].astype(np.float32) + float(head[f"{v}_frame_intercept"]))
    return {"emb_logit": emb, "frame": frame}


def score_features(feats: dict, head: dict, device: Device = "cpu") -> dict:
    """Calibrated probability, per-signal logit contributions, embedding category per text.
    A contribution is coef × value / scale: what the signal adds over its absence (value 0).
    ``device``: where the head's fine-tuned encoder runs (``auto | cpu | cuda``)."""
    v = variant_of(feats)
    cols = {"profanity": feats["profanity"]}
    if has_tfidf(head):
        cols["tfidf"] = tfidf_logit(feats["normalised"], head)
    x_emb = embedding_matrix(feats, v)
    if x_emb is not None:
        want = head[f"{v}_emb_coef"].shape[0]
        if x_emb.shape[1] != want:
            raise ValueError(
                f"toxicity: the {v} head reads {want} embedding values per sentence "
                f"({head.get('meta', {}).get('embedding_features', 'see its metadata')}), got {x_emb.shape[1]}: "
                "pass EmbeddingModel.layer_features as embed"
            )
        cols |= embedding_signals(x_emb, head, v)
    names = [str(x) for x in head[f"{v}_names"]]
    x = stack_inputs(cols, feats["rules"], names)
    logit = ((x - head[f"{v}_mean"]) / head[f"{v}_scale"]) @ head[f"{v}_coef"] + float(head[f"{v}_intercept"])
    contrib = x / head[f"{v}_scale"] * head[f"{v}_coef"]
    if f"{v}_ft_weight" in head:  # the fine-tuned encoder's logit, weighted on the val split (toxicity_train)
        ft = float(head[f"{v}_ft_weight"]) * finetuned_logits(feats["normalised"], head, device)
        logit, contrib, names = logit + ft, np.column_stack([contrib, ft]), [*names, "ft_logit"]
    a, b = (float(t) for t in head[f"{v}_platt"])
    prob = expit(a * logit + b)
    cats = None
    if feats["vecs"] is not None and head["cat_names"].size:
        cl = feats["vecs"] @ head["cat_coef"].T.astype(np.float32) + head["cat_intercept"]
        cats = [CATEGORY_NAMES.get(str(head["cat_names"][i]), str(head["cat_names"][i])) for i in cl.argmax(axis=1)]
    return {"prob": prob, "logit": logit, "contrib": contrib, "names": names, "emb_category": cats, "head": v}


def _category(evidence: dict, emb_cat: str | None, signal: str, prob: float) -> str:
    if prob < CATEGORY_THRESHOLD:
        return "none"
    if "slur" in evidence:
        return "slur"
    if "threat" in evidence:
        return "threat"
    if "dehumanising" in evidence:
        return "dehumanising comparison"
    if signal == "profanity":
        return "profanity"
    return emb_cat or ("identity attack" if "identity_negative" in evidence else "insult")


def sentence_toxicity(
    sentences: Sequence[str],
    embed: Callable[[list[str]], np.ndarray] | None = None,
    predict_prob: Callable[[list[str]], np.ndarray] | None = None,
    head: dict | None = None,
    embed_aux: Callable[[list[str]], np.ndarray] | None = None,
    device: Device = "cpu",
    answer_of: Sequence[int] | None = None,
) -> list[dict]:
    """Per sentence: ``toxicity`` (calibrated), ``profanity``, ``signal`` (the signal adding most
    to the logit), ``category`` ("none" below ``CATEGORY_THRESHOLD``), ``evidence`` (matched words
    per rule), ``normalised`` (de-obfuscated text), ``head`` (variant used). ``answer_of``: per sentence, the answer it
    belongs to — an answer none of whose sentences names a person or group caps the learned head
    (``attributes.attribute_scores``); None: each sentence stands alone (posts), no such cap."""
    sentences = [str(s) for s in sentences]
    if not sentences:
        return []
    h = head or load_toxicity_head()
    if embed_aux is not None and "full_names" not in h:
        raise ValueError(
            "toxicity: embed_aux (USE) given, but this head has no 'full' variant (trained without --with-use); pass embed only"
        )
    feats = featurise(sentences, embed, predict_prob, embed_aux)
    sc = score_features(feats, h, device)
    nobody = [False] * len(sentences)
    if answer_of is not None:
        named = {a for a, t, e in zip(answer_of, feats["normalised"], feats["evidence"]) if names_someone(undo_misspellings(t, e), e)}
        nobody = [a not in named for a in answer_of]
    out = []
    for i, s in enumerate(sentences):
        c = sc["contrib"][i]
        j = int(np.argmax(c))
        base = sc["names"][j].partition("*")[0]
        signal = SIGNAL_NAMES.get(base, base) if c[j] > 0 else "none"
        ev = feats["evidence"][i]
        emb_cat = sc["emb_category"][i] if sc["emb_category"] else None
        learned = float(sc["prob"][i])
        attrs = attribute_scores(
            feats["normalised"][i], ev, float(feats["profanity"][i]), learned, f"{signal}, {emb_cat or 'no class'}", nobody[i]
        )
        prob, reason = attrs["TOXICITY"]
        top = reason.partition(":")[0]
        if "learned head" not in reason:
            signal = f"lexicon_{top.lower()}" if prob > 0 else "none"
        category = {"THREAT": "threat", "INSULT": "insult"}.get(top) if prob >= CATEGORY_THRESHOLD else None
        out.append(
            {
                "sentence": s,
                "toxicity": prob,
                "learned": learned,
                "attributes": {a: v for a, (v, _) in attrs.items()},
                "reasons": {a: why for a, (_, why) in attrs.items()},
                "profanity": float(feats["profanity"][i]),
                "signal": signal,
                "category": category or _category(ev, emb_cat, signal, prob),
                "evidence": ev,
                "normalised": feats["normalised"][i],
                "head": sc["head"],
            }
        )
    return out


REASON_FROM = 0.3  # attributes scored below this are not explained in ``toxicity_attribute_reasons``


def attribute_reasons(per_sentence: Sequence[dict]) -> str:
    """ "IDENTITY_ATTACK 0.90 — slur: kike — «fucking kike»; …" for each attribute whose highest
    sentence score reaches ``REASON_FROM`` (TOXICITY first), or "" when none does."""
    parts = []
    for a in ATTRIBUTES:
        best = max(per_sentence, key=lambda p: p["attributes"][a])
        if best["attributes"][a] >= REASON_FROM:
            parts.append(f"{a} {best['attributes'][a]:.2f} — {best['reasons'][a]} — «{best['sentence'][:80]}»")
    return "; ".join(parts)


def _evidence_text(ev: dict) -> str:
    keep = [k for k in ("slur", "threat", "dehumanising", "obfuscated", "hate_word", "denounce", "reported") if k in ev]
    return "; ".join(f"{k}: {', '.join(ev[k])}" for k in keep)


def toxicity_explanations(
    answer_sentences_per_row: Sequence[Sequence[str] | None],
    embed: Callable[[list[str]], np.ndarray] | None = None,
    predict_prob: Callable[[list[str]], np.ndarray] | None = None,
    head: dict | None = None,
    embed_aux: Callable[[list[str]], np.ndarray] | None = None,
    device: Device = "cpu",
    answers: bool = False,
) -> list[dict]:
    """Per row, every column of ``TOXICITY_COLUMNS``. ``answers``: the rows are answers (the campaign metric): one that
    names no person or group caps the learned head (``sentence_toxicity``'s ``answer_of``); False: posts, no such cap. All sentences of all rows are featurised
    together (one ``embed`` call, one profanity batch). A row with no sentences gets None / [].
    ``device``: where the fine-tuned encoder runs (``auto | cpu | cuda``)."""
    rows = [[s for s in (r or []) if s and str(s).strip()] for r in answer_sentences_per_row]
    answer_of = [i for i, r in enumerate(rows) for _ in r] if answers else None
    flat = sentence_toxicity([s for r in rows for s in r], embed, predict_prob, head, embed_aux, device, answer_of)
    out, pos = [], 0
    for r in rows:
        per = flat[pos : pos + len(r)]
        pos += len(r)
        if not per:
            out.append({c: None for c in TOXICITY_COLUMNS} | {"toxicity_per_sentence": []})
            continue
        probs = [p["toxicity"] for p in per]
        top = per[int(np.argmax(probs))]
        out.append(
            {
                "toxicity": max(probs),
                "toxicity_mean": float(np.mean(probs)),
                "toxicity_per_sentence": probs,
                **{f"toxicity_{a.lower()}": max(p["attributes"][a] for p in per) for a in ATTRIBUTES[1:]},
                "toxicity_attribute_reasons": attribute_reasons(per),
                "toxicity_top_sentence": top["sentence"],
                "toxicity_category": top["category"],
                "toxicity_signal": top["signal"],
                "toxicity_evidence": _evidence_text(top["evidence"]),
                "toxicity_head": top["head"],
            }
        )
    return out


def toxicity_scores(
    answer_sentences_per_row: Sequence[Sequence[str] | None],
    predict_prob: Callable[[list[str]], np.ndarray] | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    head: dict | None = None,
    embed_aux: Callable[[list[str]], np.ndarray] | None = None,
) -> list[dict]:
    """Per row: ``toxicity`` (calibrated, max over sentences), ``toxicity_mean``,
    ``toxicity_per_sentence`` and ``toxicity_profanity`` (the PROFANITY attribute, max over sentences)."""
    keep = ("toxicity", "toxicity_mean", "toxicity_per_sentence", "toxicity_profanity")
    rows = toxicity_explanations(answer_sentences_per_row, embed, predict_prob, head, embed_aux)
    return [{k: r[k] for k in keep} for r in rows]
