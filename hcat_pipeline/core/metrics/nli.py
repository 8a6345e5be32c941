"""Groundedness by natural language inference (HCAT paper §3.2.2), the pure part.

The paper treats the context C as the premise and each answer sentence a_i as the hypothesis. A
linear classifier computes a logit ``z = wᵀx + b`` from a representation ``x`` of the (premise,
hypothesis) pair; the signed distance to the decision boundary ``wᵀx + b = 0`` is
``D = z / ‖w‖`` (D > 0: entailment side, grounded; D < 0: potential hallucination), mapped to a
groundedness score ``σ(D) = 1 / (1 + e^{-D})``.

No packaged 3-way NLI model exists offline, so the project learns that linear head itself:

* ``x`` (``pair_features``) is built from arrays the caller computed with the project's models:
  sentence embeddings of the premise sentences and the hypothesis (max / top-2 / centroid cosine,
  the alignment with the best premise sentence), lexical novelty of the hypothesis w.r.t. the
  premise (content words, bigrams, numbers, capitalised names — all as *fractions*, so sentence
  length is not encoded), a negation-parity mismatch with the best-aligned premise sentence, and
  optionally a contradiction probability from a packaged contradiction classifier. Features are
  standardised with the training mean / scale, and ``x`` is that standardised vector.
* ``NLIHead`` is a logistic regression fitted on labelled pairs; ``decision`` returns z, D, σ(D).
* ``perturbation_pairs`` generates the labelled training pairs from any corpus (seeded):
  faithful hypotheses (copies, clause spans, merges of premise clauses) against number / entity /
  word swaps, negations, unsupported sentences from the same document, sentences from other
  documents, and partial hallucinations (a faithful clause joined to an unsupported one).
* ``qa_pairs`` generates QA-style length-matched twins (a faithful short answer span vs a
  hallucinated span of the same word count: other-document span, swapped name / number / keyword,
  half-faithful mix), optionally with paraphrased faithful spans; the shipped head is fitted on these.
* ``token_alignment`` (feature ``token_align``, optional): the mean over hypothesis tokens of the
  best cosine to a premise token, from MiniLM token embeddings supplied by the resource.

No model is loaded here; the resource ``hcat_pipeline.resources.nli.NLIModel`` supplies the arrays.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# ---------------------------------------------------------------------------------------------
# lexical helpers (regex only; deterministic)

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'_\-]*|\d+(?:[.,:]\d+)*")
_NUM_RE = re.compile(r"\d+(?:[.,:]\d+)*")
_CAP_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][A-Za-z0-9'\-]+")
_NEG_RE = re.compile(r"\b(?:not|no|never|none|nothing|neither|nor|cannot|without)\b|n't\b", re.I)

STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from as into onto about over under
    than that this these those there here it its it's is are was were be been being am do does did
    doing have has had having can could will would shall should may might must i you he she we they
    me him her us them my your his our their mine yours ours theirs what which who whom whose when
    where why how all any both each few more most other some such only own same so too very just also
    not no nor yes well oh ok okay really like know think yeah sure one s t""".split()
)


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _WORD_RE.findall(text)]


def content_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOPWORDS and len(t) > 1]


def _stem(t: str) -> str:
    """A crude suffix stripper, so 'films' matches 'film' and 'directed' matches 'director' less often."""
    for suf in ("ing", "ed", "es", "s"):
        if len(t) > len(suf) + 3 and t.endswith(suf):
            return t[: -len(suf)]
    return t


def numbers(text: str) -> list[str]:
    return [n.replace(",", "") for n in _NUM_RE.findall(text)]


def capitalised(text: str) -> list[str]:
    """Capitalised words not at the start of a sentence: a regex proxy for names."""
    return [m.group(0).lower() for m in _CAP_RE.finditer(text.strip())]


def negation_count(text: str) -> int:
    return len(_NEG_RE.findall(text))


def _novelty(hyp: Sequence[str], prem: set[str]) -> float:
    """Fraction of ``hyp`` items absent from ``prem`` (0 when ``hyp`` is empty)."""
    if not hyp:
        return 0.0
    return sum(1 for t in hyp if t not in prem) / len(hyp)


# ---------------------------------------------------------------------------------------------
# features

SIM_FEATURES = ["max_sim", "top2_sim", "centroid_sim"]
LEX_FEATURES = [
    "content_novelty",
    "bigram_novelty",
    "number_novelty",
    "has_unsupported_number",
    "name_novelty",
    "premise_coverage",
    "negation_mismatch",
]
CONTRADICTION_FEATURE = "contradiction"
TOKEN_ALIGN_FEATURE = "token_align"


def feature_names(use_contradiction: bool = False, dense: bool = False, dim: int = 0, token_align: bool = False) -> list[str]:
    names = SIM_FEATURES + LEX_FEATURES
    if use_contradiction:
        names = names + [CONTRADICTION_FEATURE]
    if token_align:
        names = names + [TOKEN_ALIGN_FEATURE]
    if dense:
        names = names + [f"uv_{i}" for i in range(dim)] + [f"absdiff_{i}" for i in range(dim)]
    return names


def lexical_features(premise_sentences: Sequence[str], hypothesis: str, best_premise: str) -> list[float]:
    """Novelty fractions of the hypothesis w.r.t. the whole premise, normalised by its own size."""
    prem_text = " ".join(premise_sentences)
    prem_content = {_stem(t) for t in content_tokens(prem_text)}
    hyp_content = [_stem(t) for t in content_tokens(hypothesis)]
    pc = [_stem(t) for t in content_tokens(prem_text)]
    prem_bi = set(zip(pc, pc[1:]))
    hyp_bi = list(zip(hyp_content, hyp_content[1:]))
    prem_nums = set(numbers(prem_text))
    hyp_nums = numbers(hypothesis)
    prem_caps = {_stem(t) for t in tokens(prem_text)}
    hyp_caps = [_stem(t) for t in capitalised(hypothesis)]
    best_content = {_stem(t) for t in content_tokens(best_premise)}
    coverage = (len(best_content & set(hyp_content)) / len(best_content)) if best_content else 0.0
    neg_mismatch = float((negation_count(hypothesis) % 2) != (negation_count(best_premise) % 2))
    num_nov = _novelty(hyp_nums, prem_nums)
    return [
        _novelty(hyp_content, prem_content),
        _novelty(hyp_bi, prem_bi),
        num_nov,
        float(num_nov > 0),
        _novelty(hyp_caps, prem_caps),
        coverage,
        neg_mismatch,
    ]


def token_alignment(premise_tokens: Sequence[np.ndarray], hypothesis_tokens: np.ndarray) -> float:
    """Mean over hypothesis tokens of the best cosine to any premise token (length-free, in [-1, 1]).

    ``premise_tokens``: one (t_j × d) token-embedding matrix per premise sentence;
    ``hypothesis_tokens``: the (t × d) token embeddings of the hypothesis (special tokens removed by
    the caller). 0 when either side has no tokens.
    """
    H = np.asarray(hypothesis_tokens, dtype=np.float64)
    mats = [np.asarray(m, dtype=np.float64) for m in premise_tokens if np.asarray(m).size]
    if H.size == 0 or not mats:
        return 0.0
    P = np.vstack(mats)
    H = H / np.linalg.norm(H, axis=1, keepdims=True).clip(1e-12)
    P = P / np.linalg.norm(P, axis=1, keepdims=True).clip(1e-12)
    return float((H @ P.T).max(axis=1).mean())


def pair_features(
    premise_embeddings: Sequence[np.ndarray],
    hypothesis_embeddings: np.ndarray,
    premise_sentences: Sequence[Sequence[str]],
    hypotheses: Sequence[str],
    contradiction: np.ndarray | None = None,
    dense: bool = False,
    token_align: np.ndarray | None = None,
) -> np.ndarray:
    """Raw (unstandardised) features, one row per (premise sentence list, hypothesis) pair.

    ``premise_embeddings[i]`` is the (n_i × d) L2-normalised embedding matrix of the premise
    sentences of pair i, ``hypothesis_embeddings[i]`` the normalised embedding of its hypothesis.
    ``token_align[i]`` (optional) is ``token_alignment`` of pair i, computed by the caller from
    token embeddings.
    """
    m = len(hypotheses)
    if not (len(premise_embeddings) == len(premise_sentences) == m == len(hypothesis_embeddings)):
        raise ValueError("premise_embeddings, premise_sentences, hypotheses and hypothesis_embeddings differ in length")
    d = hypothesis_embeddings.shape[1] if m else 0
    rows = []
    for i in range(m):
        u = np.asarray(hypothesis_embeddings[i], dtype=np.float64)
        V = np.asarray(premise_embeddings[i], dtype=np.float64).reshape(-1, d)
        prem = list(premise_sentences[i])
        if V.shape[0] == 0:
            sims = np.zeros(1)
            v_best = np.zeros(d)
            best_text = ""
            centroid_sim = 0.0
        else:
            sims = V @ u
            j = int(np.argmax(sims))
            v_best = V[j]
            best_text = prem[j] if j < len(prem) else ""
            c = V.mean(axis=0)
            cn = np.linalg.norm(c)
            centroid_sim = float(c @ u / cn) if cn > 0 else 0.0
        s_sorted = np.sort(sims)[::-1]
        row = [float(s_sorted[0]), float(s_sorted[:2].mean()), centroid_sim]
        row += lexical_features(prem, hypotheses[i], best_text)
        if contradiction is not None:
            row.append(float(contradiction[i]))
        if token_align is not None:
            row.append(float(token_align[i]))
        if dense:
            row += list(u * v_best) + list(np.abs(u - v_best))
        rows.append(row)
    n_feat = len(feature_names(contradiction is not None, dense, d, token_align is not None))
    return np.asarray(rows, dtype=np.float64).reshape(m, n_feat)


# ---------------------------------------------------------------------------------------------
# the linear head: z = wᵀx + b, D = z / ‖w‖, σ(D)


def sigmoid(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.where(x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x))))


@dataclass
class NLIHead:
    """A logistic-regression entailment head over standardised pair features."""

    feature_names: list[str]
    w: np.ndarray  # weight vector over the standardised features x
    b: float
    mean: np.ndarray
    scale: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def w_norm(self) -> float:
        return float(np.linalg.norm(self.w))

    def standardise(self, raw: np.ndarray) -> np.ndarray:
        raw = np.asarray(raw, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[1] != len(self.feature_names):
            raise ValueError(f"expected features of width {len(self.feature_names)}, got shape {raw.shape}")
        return (raw - self.mean) / self.scale

    def decision(self, raw: np.ndarray) -> dict[str, np.ndarray]:
        """z = wᵀx + b, the distance D = z/‖w‖ to the boundary, and σ(D), per row of raw features."""
        x = self.standardise(raw)
        z = x @ self.w + self.b
        D = z / self.w_norm
        return {"z": z, "D": D, "sigma": sigmoid(D)}

    # -- persistence (JSON: readable, diffable, small) --
    def to_dict(self) -> dict:
        return {
            "format": "hcat-nli-head/1",
            "feature_names": list(self.feature_names),
            "w": [float(v) for v in self.w],
            "b": float(self.b),
            "mean": [float(v) for v in self.mean],
            "scale": [float(v) for v in self.scale],
            "info": self.info,
        }

    @classmethod
    def from_dict(cls, d: dict) -> NLIHead:
        if d.get("format") != "hcat-nli-head/1":
            raise ValueError(f"not an NLI head file (format={d.get('format')!r})")
        return cls(
            feature_names=list(d["feature_names"]),
            w=np.asarray(d["w"], dtype=np.float64),
            b=float(d["b"]),
            mean=np.asarray(d["mean"], dtype=np.float64),
            scale=np.asarray(d["scale"], dtype=np.float64),
            info=dict(d.get("info", {})),
        )

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1))
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> NLIHead:
        return cls.from_dict(json.loads(Path(path).read_text()))


def fit_head(
    raw: np.ndarray,
    labels: np.ndarray,
    names: Sequence[str],
    C: float = 1.0,
    seed: int = 0,
    info: dict | None = None,
    monotone: bool | dict[str, int] = True,
) -> NLIHead:
    """Fit the entailment head (label 1 = entailed / grounded) by L2-regularised logistic regression.

    ``monotone`` constrains the sign of chosen weights (True: ``MONOTONE``): more similarity to the
    premise may never lower the entailment logit, more novelty or a negation / contradiction may
    never raise it. Without it, collinear features trained on synthetic pairs can take opposite
    signs that cancel on the training distribution and misbehave elsewhere.
    """

    raw = np.asarray(raw, dtype=np.float64)
    y = np.asarray(labels, dtype=int)
    if raw.shape[0] != y.shape[0] or raw.shape[1] != len(names):
        raise ValueError("features, labels and names do not match")
    if len(set(y.tolist())) < 2:
        raise ValueError("training pairs need both labels")
    mean = raw.mean(axis=0)
    scale = raw.std(axis=0)
    scale[scale < 1e-9] = 1.0
    x = (raw - mean) / scale
    signs = MONOTONE if monotone is True else (monotone or {})
    bounds = [(0.0, None) if signs.get(n, 0) > 0 else (None, 0.0) if signs.get(n, 0) < 0 else (None, None) for n in names]
    w, b = _logistic_fit(x, y, C, bounds)
    if not np.any(w):
        raise ValueError("the fitted head has a zero weight vector (features carry no signal)")
    head = NLIHead(list(names), w, b, mean, scale, dict(info or {}))
    z = x @ w + b
    head.info.update({"n_train": int(len(y)), "positive_rate": float(y.mean()), "train_auroc": auroc(y, z), "C": C})
    return head


MONOTONE: dict[str, int] = {
    "max_sim": 1,
    "top2_sim": 1,
    "centroid_sim": 1,
    "premise_coverage": 1,
    "content_novelty": -1,
    "bigram_novelty": -1,
    "number_novelty": -1,
    "has_unsupported_number": -1,
    "name_novelty": -1,
    "negation_mismatch": -1,
    CONTRADICTION_FEATURE: -1,
    TOKEN_ALIGN_FEATURE: 1,
    "llm_log_odds": 1,
}


def _logistic_fit(x: np.ndarray, y: np.ndarray, C: float, bounds: list) -> tuple[np.ndarray, float]:
    """Minimise C·Σ log-loss + ½‖w‖² (sklearn's objective) with per-weight bounds (L-BFGS-B; deterministic)."""
    from scipy.optimize import minimize

    n, d = x.shape
    t = 2.0 * y - 1.0

    def fg(theta):
        w, b = theta[:d], theta[d]
        m = t * (x @ w + b)
        loss = np.logaddexp(0.0, -m)
        g = -t * sigmoid(-m)
        return C * loss.sum() + 0.5 * w @ w, np.concatenate([C * (x.T @ g) + w, [C * g.sum()]])

    res = minimize(fg, np.zeros(d + 1), jac=True, method="L-BFGS-B", bounds=list(bounds) + [(None, None)],
                   options={"maxiter": 5000})
    return res.x[:d].astype(np.float64), float(res.x[d])


def auroc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve (Mann-Whitney U with mid-ranks for ties)."""
    from scipy.stats import rankdata

    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=np.float64)
    n1 = int(y.sum())
    n0 = len(y) - n1
    if n1 == 0 or n0 == 0:
        return float("nan")
    r = rankdata(s)
    return float((r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


# ---------------------------------------------------------------------------------------------
# perturbation pairs from a corpus

POSITIVE_KINDS = ("copy", "span", "merge", "phrase", "synonym_swap")
NEGATIVE_KINDS = ("number_swap", "entity_swap", "word_swap", "negation", "same_doc_unsupported", "other_doc", "partial", "phrase_unsupported")
_FRAMES = ("Yes, {}", "I think {}", "Well, {}", "Did you know that {}", "Actually, {}", "As far as I know, {}")
_AUX_RE = re.compile(r"\b(is|are|was|were|can|could|will|would|should|must|may|does|do|did|has|have|had)\b")
_CLAUSE_RE = re.compile(r",\s+|;\s+|\s+\(|\)\s*|\s+(?:and|which|but|while|whereas)\s+")


@dataclass
class Pair:
    premise: list[str]
    hypothesis: str
    label: int  # 1: entailed by the premise, 0: not entailed
    kind: str

    def as_dict(self) -> dict:
        return {"premise": self.premise, "hypothesis": self.hypothesis, "label": self.label, "kind": self.kind}


def _usable(s: str) -> bool:
    n = len(tokens(s))
    return 5 <= n <= 60 and sum(c.isalpha() for c in s) >= 0.6 * len(s.replace(" ", ""))


def _clauses(s: str) -> list[str]:
    parts = [p.strip(" ,;()") for p in _CLAUSE_RE.split(s)]
    return [p for p in parts if len(tokens(p)) >= 4]


def _finish(s: str) -> str:
    s = s.strip()
    if s and s[-1] not in ".!?":
        s += "."
    return s[0].upper() + s[1:] if s else s


def _lower_first(s: str) -> str:
    return s[0].lower() + s[1:] if len(s) > 1 and not s[:2].isupper() else s


def _span(s: str, rng: random.Random) -> str | None:
    cl = _clauses(s)
    if len(cl) < 2:
        return None
    k = rng.randrange(len(cl))
    return _finish(cl[k])


def _number_swap(s: str, rng: random.Random) -> str | None:
    ms = list(_NUM_RE.finditer(s))
    if not ms:
        return None
    m = rng.choice(ms)
    old = m.group(0)
    digits = old.replace(",", "").replace(".", "").replace(":", "")
    if not digits.isdigit():
        return None
    val = int(digits)
    new = val + rng.choice([-1, 1]) * rng.randint(1, max(2, val // 3 + 1))
    if new < 0 or str(new) == digits:
        new = val + 7
    return s[: m.start()] + str(new) + s[m.end() :]


def _swap_token(s: str, pool: Sequence[str], pick, rng: random.Random) -> str | None:
    cands = [m for m in re.finditer(r"[A-Za-z][A-Za-z'_\-]+", s) if pick(m)]
    if not cands or not pool:
        return None
    m = rng.choice(cands)
    low = m.group(0).lower()
    options = [w for w in pool if w.lower() != low]
    if not options:
        return None
    rep = rng.choice(options)
    if m.group(0)[0].isupper():
        rep = rep[0].upper() + rep[1:]
    return s[: m.start()] + rep + s[m.end() :]


def _negate(s: str, rng: random.Random) -> str | None:
    if _NEG_RE.search(s):
        out = re.sub(r"\s+not\b|n't\b|\bnever\s+", " ", s, count=1)
        out = re.sub(r"\s{2,}", " ", out)
        return out if out != s else None
    m = _AUX_RE.search(s)
    if not m:
        return None
    return s[: m.end()] + " not" + s[m.end() :]


def perturbation_pairs(
    documents: Sequence[Sequence[str]],
    n_pairs: int = 4000,
    seed: int = 0,
    window: tuple[int, int] = (1, 4),
    frame_rate: float = 0.25,
    neighbours: dict[str, Sequence[str]] | None = None,
) -> list[Pair]:
    """Labelled (premise sentences, hypothesis) pairs generated from sentences of real documents.

    Each pair takes a window of consecutive sentences of one document as the premise. About half
    the pairs are faithful (label 1) and half are perturbed or unsupported (label 0), over the kinds
    in ``POSITIVE_KINDS`` / ``NEGATIVE_KINDS``. With probability ``frame_rate`` the hypothesis is
    wrapped in a conversational frame, equally for both labels. Deterministic for a given seed.

    ``neighbours`` (word -> near-synonyms, e.g. from ``nearest_neighbours`` over word embeddings)
    enables the ``synonym_swap`` positives: a premise sentence with one or two content words replaced
    by a close neighbour — lexically novel but meaning-preserving (mostly), the counterpart of the
    random ``word_swap`` negatives. Without it that kind is skipped.
    """
    rng = random.Random(seed)
    docs = [[s.strip() for s in d if s and s.strip()] for d in documents]
    docs = [d for d in docs if sum(_usable(s) for s in d) >= 2]
    if len(docs) < 2:
        raise ValueError("need at least two documents with two usable sentences each")
    vocab_words: list[str] = []
    vocab_names: list[str] = []
    for d in docs:
        for s in d:
            vocab_words.extend(t for t in content_tokens(s) if t.isalpha() and len(t) > 3)
            vocab_names.extend(m.group(0) for m in _CAP_RE.finditer(s))
    vocab_words = sorted(set(vocab_words))
    vocab_names = sorted(set(vocab_names))
    out: list[Pair] = []
    attempts = 0
    while len(out) < n_pairs and attempts < n_pairs * 30:
        attempts += 1
        # the label and kind are drawn first, so rare kinds (numbers, names) keep their share
        label = int(rng.random() < 0.5)
        kinds = [k for k in POSITIVE_KINDS if neighbours or k != "synonym_swap"] if label else NEGATIVE_KINDS
        kind = rng.choice(kinds)
        hyp = _try_pair(docs, kind, rng, window, vocab_words, vocab_names, neighbours=neighbours or {})
        if hyp is None:
            continue
        premise, hyp, src = hyp
        if rng.random() < frame_rate:
            frame = rng.choice(_FRAMES)
            body = _lower_first(hyp.rstrip("."))
            hyp = frame.format(body) + ("?" if frame.startswith("Did") else ".")
        out.append(Pair(list(premise), hyp, label, kind))
    return out


def _phrase(s: str, rng: random.Random, lo: int = 2, hi: int = 6) -> str | None:
    """A short contiguous phrase of ``s`` starting at a content word (like a short QA answer)."""
    words = s.rstrip(".").split()
    starts = [i for i, w in enumerate(words) if w.lower().strip(",;:()\"'") not in STOPWORDS]
    if len(words) < lo or not starts:
        return None
    i = rng.choice(starts)
    n = rng.randint(lo, hi)
    ph = " ".join(words[i : i + n]).strip(" ,;:()")
    return ph if len(tokens(ph)) >= 1 and any(c.isalnum() for c in ph) else None


def _synonym_swap(s: str, neighbours: dict[str, Sequence[str]], rng: random.Random) -> str | None:
    cands = [m for m in re.finditer(r"[A-Za-z][A-Za-z'_\-]+", s) if m.group(0).lower() in neighbours]
    if not cands:
        return None
    picked = sorted(rng.sample(cands, min(len(cands), rng.choice([1, 2]))), key=lambda m: -m.start())
    for m in picked:
        rep = rng.choice(list(neighbours[m.group(0).lower()]))
        if m.group(0)[0].isupper():
            rep = rep[0].upper() + rep[1:]
        s = s[: m.start()] + rep + s[m.end() :]
    return s


def _draw_window(docs, rng, window):
    """A random premise window: (doc index, doc, start, width, premise sentences, usable ones)."""
    di = rng.randrange(len(docs))
    doc = docs[di]
    w = rng.randint(window[0], min(window[1], len(doc)))
    start = rng.randrange(0, len(doc) - w + 1)
    premise = doc[start : start + w]
    return di, doc, start, w, premise, [s for s in premise if _usable(s)]


def _try_pair(docs, kind, rng, window, vocab_words, vocab_names, tries: int = 5, neighbours=None):
    """(premise, hypothesis, source sentence) for one pair of ``kind``, or None."""
    for _ in range(tries):
        di, doc, start, w, premise, inside = _draw_window(docs, rng, window)
        if not inside:
            continue
        src = rng.choice(inside)
        outside = [s for k, s in enumerate(doc) if (k < start or k >= start + w) and _usable(s) and s not in premise]
        other = docs[(di + rng.randrange(1, len(docs))) % len(docs)]
        other_sents = [s for s in other if _usable(s)]
        hyp: str | None = None
        if kind == "copy":
            hyp = src
        elif kind == "span":
            hyp = _span(src, rng)
        elif kind == "merge":
            if len(inside) >= 2:
                a, b = rng.sample(inside, 2)
                ca, cb = _clauses(a) or [a.rstrip(".")], _clauses(b) or [b.rstrip(".")]
                hyp = _finish(f"{rng.choice(ca).rstrip('.')} and {_lower_first(rng.choice(cb).rstrip('.'))}")
        elif kind == "phrase":
            hyp = _phrase(src, rng)
        elif kind == "synonym_swap":
            hyp = _synonym_swap(src, neighbours or {}, rng)
        elif kind == "number_swap":
            hyp = _number_swap(src, rng)
        elif kind == "entity_swap":
            hyp = _swap_token(src, vocab_names, lambda m: m.start() > 0 and m.group(0)[0].isupper(), rng)
        elif kind == "word_swap":
            hyp = _swap_token(src, vocab_words, lambda m: m.group(0).lower() not in STOPWORDS and len(m.group(0)) > 3, rng)
            if hyp is not None and rng.random() < 0.5:
                hyp = _swap_token(hyp, vocab_words, lambda m: m.group(0).lower() not in STOPWORDS and len(m.group(0)) > 3, rng)
        elif kind == "negation":
            hyp = _negate(src, rng)
        elif kind == "same_doc_unsupported":
            hyp = rng.choice(outside) if outside else None
        elif kind == "other_doc":
            hyp = rng.choice(other_sents) if other_sents else None
        elif kind == "phrase_unsupported":
            pool = outside or other_sents
            hyp = _phrase(rng.choice(pool), rng) if pool else None
            if hyp is not None and all(t in set(content_tokens(" ".join(premise))) for t in content_tokens(hyp)):
                hyp = None
        elif kind == "partial":
            if outside:
                a = _clauses(src) or [src.rstrip(".")]
                b = rng.choice(outside)
                cb = _clauses(b) or [b.rstrip(".")]
                hyp = _finish(f"{rng.choice(a).rstrip('.')}, and {_lower_first(rng.choice(cb).rstrip('.'))}")
        else:
            raise ValueError(f"unknown perturbation kind {kind!r}")
        if hyp and not (kind in NEGATIVE_KINDS and hyp.strip() == src.strip()):
            return premise, hyp, src
    return None


QA_POSITIVE_KINDS = ("qa_span", "qa_paraphrase")
QA_NEGATIVE_KINDS = ("qa_other_span", "qa_entity_swap", "qa_number_swap", "qa_word_swap", "qa_mixed")
_QA_FRAMES = ("{}", "{}", "It is {}", "The answer is {}", "I believe it is {}")


def _words_span(words: Sequence[str], rng: random.Random, length: int) -> list[str] | None:
    """``length`` consecutive words of ``words`` starting at a content word, or None."""
    starts = [i for i in range(0, len(words) - length + 1) if words[i].lower().strip(",;:()\"'.") not in STOPWORDS]
    if not starts:
        return None
    i = rng.choice(starts)
    return [w.strip(",;:()\"'") if k in (0, length - 1) else w for k, w in enumerate(words[i : i + length])]


def _replace_word(words: list[str], pick, pool: Sequence[str], banned: set[str], rng: random.Random, n: int = 1) -> list[str] | None:
    idx = [i for i, w in enumerate(words) if pick(i, w)]
    opts = [w for w in pool if w.lower() not in banned]
    if not idx or not opts:
        return None
    out = list(words)
    for i in rng.sample(idx, min(n, len(idx))):
        rep = rng.choice(opts)
        out[i] = (rep[0].upper() + rep[1:]) if out[i][:1].isupper() else rep
    return out


def qa_pairs(
    documents: Sequence[Sequence[str]],
    n_pairs: int = 2000,
    seed: int = 0,
    window: tuple[int, int] = (1, 3),
    span_words: tuple[int, int] = (2, 10),
    frame_rate: float = 0.4,
    neighbours: dict[str, Sequence[str]] | None = None,
    paraphrase_rate: float = 0.5,
) -> list[Pair]:
    """QA-style labelled pairs, generated in length-matched twins (HaluEval-QA-like answers).

    The premise is a window of sentences of one document (the knowledge). Each draw yields a
    faithful short answer — a span of ``span_words`` words copied from a premise sentence — and a
    hallucinated answer of the SAME word count for the same premise: a span of another document or
    of an unsupported sentence of the same one (``qa_other_span``), the faithful span with a name
    swapped for another name of the corpus (``qa_entity_swap``), a number changed
    (``qa_number_swap``), one or two content words swapped for corpus words absent from the premise
    (``qa_word_swap``), or the first part of the faithful span completed by an unsupported one
    (``qa_mixed``). Both twins get the same answer frame, so neither length nor wording of the
    frame tells the labels apart. Deterministic for a given seed.

    With ``neighbours`` (as for ``perturbation_pairs``), a share ``paraphrase_rate`` of the faithful
    spans get one or two words replaced by a derivational variant (``qa_paraphrase``): lexically
    novel but supported, so lexical novelty alone no longer separates the twins.
    """
    rng = random.Random(seed)
    docs = [[s.strip() for s in d if s and s.strip()] for d in documents]
    docs = [d for d in docs if sum(_usable(s) for s in d) >= 2]
    if len(docs) < 2:
        raise ValueError("need at least two documents with two usable sentences each")
    names: set[str] = set()
    words: set[str] = set()
    for d in docs:
        for s in d:
            words.update(t for t in content_tokens(s) if t.isalpha() and len(t) > 3)
            names.update(m.group(0) for m in _CAP_RE.finditer(s) if m.group(0).isalpha())
    vocab_names, vocab_words = sorted(names), sorted(words)
    out: list[Pair] = []
    attempts = 0
    while len(out) < n_pairs and attempts < n_pairs * 30:
        attempts += 1
        di, doc, start, w, premise, inside = _draw_window(docs, rng, window)
        if not inside:
            continue
        src_words = rng.choice(inside).rstrip(".!?").split()
        if len(src_words) < span_words[0]:
            continue
        length = rng.randint(span_words[0], min(span_words[1], len(src_words)))
        pos = _words_span(src_words, rng, length)
        if pos is None or not content_tokens(" ".join(pos)):
            continue
        prem_text = " ".join(premise)
        prem_tok = set(tokens(prem_text))
        prem_stems = {_stem(t) for t in content_tokens(prem_text)}
        kind = rng.choice(QA_NEGATIVE_KINDS)
        neg: list[str] | None = None
        outside = [s for k, s in enumerate(doc) if (k < start or k >= start + w) and _usable(s)]
        other = [s for s in docs[(di + rng.randrange(1, len(docs))) % len(docs)] if _usable(s)]
        if kind in ("qa_other_span", "qa_mixed"):
            pool = outside if (outside and rng.random() < 0.5) else other
            if not pool:
                continue
            cand = rng.choice(pool).rstrip(".!?").split()
            if kind == "qa_other_span":
                neg = _words_span(cand, rng, length) if len(cand) >= length else None
            elif length >= 4:
                k = rng.randint(1, length // 2)
                tail = _words_span(cand, rng, length - k) if len(cand) >= length - k else None
                neg = pos[:k] + tail if tail else None
        elif kind == "qa_entity_swap":
            neg = _replace_word(pos, lambda i, t: t[:1].isupper() and t.isalpha() and t.lower() not in STOPWORDS,
                                vocab_names, prem_tok, rng)
        elif kind == "qa_number_swap":
            ns = _number_swap(" ".join(pos), rng)
            neg = ns.split() if ns else None
        elif kind == "qa_word_swap":
            neg = _replace_word(pos, lambda i, t: t.lower() not in STOPWORDS and t.isalpha() and len(t) > 3,
                                vocab_words, prem_tok, rng, n=rng.choice([1, 2]))
        if not neg:
            continue
        neg_text = " ".join(neg)
        # the hallucinated twin must assert something the premise does not contain
        if all(_stem(t) in prem_stems for t in content_tokens(neg_text)) and set(numbers(neg_text)) <= set(numbers(prem_text)):
            continue
        pos_text, pos_kind = " ".join(pos), "qa_span"
        if neighbours and rng.random() < paraphrase_rate:
            para = _synonym_swap(pos_text, neighbours, rng)
            if para and para != pos_text:
                pos_text, pos_kind = para, "qa_paraphrase"
        frame = rng.choice(_QA_FRAMES) if rng.random() < frame_rate else "{}"
        out.append(Pair(list(premise), _finish(frame.format(pos_text)), 1, pos_kind))
        out.append(Pair(list(premise), _finish(frame.format(neg_text)), 0, kind))
    return out[:n_pairs]


def length_matched_auroc(labels: Sequence[int], scores: Sequence[float], lengths: Sequence[int], max_ratio: float = 1.25) -> dict:
    """AUROC over (positive, negative) pairs of similar length only.

    A positive and a negative form a comparable pair when the longer of the two is at most
    ``max_ratio`` times the shorter (in words). The result is the fraction of comparable pairs the
    score orders correctly (ties count ½): the Mann-Whitney AUROC restricted to length-matched pairs,
    so a score that only tracks length gets about 0.5.
    """
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=np.float64)
    n = np.asarray(lengths, dtype=np.float64).clip(min=1)
    pos, neg = np.where(y == 1)[0], np.where(y == 0)[0]
    if len(pos) == 0 or len(neg) == 0:
        return {"auroc": float("nan"), "pairs": 0}
    lp, ln = n[pos][:, None], n[neg][None, :]
    ok = np.maximum(lp, ln) <= max_ratio * np.minimum(lp, ln)
    diff = s[pos][:, None] - s[neg][None, :]
    wins = (diff > 0) + 0.5 * (diff == 0)
    total = int(ok.sum())
    if total == 0:
        return {"auroc": float("nan"), "pairs": 0}
    return {"auroc": float((wins * ok).sum() / total), "pairs": total}


def answer_aggregate(sigmas: Sequence[float]) -> float:
    """The answer-level groundedness: the mean of σ(D_i) over its k sentences (paper §3.2, 1/k Σ)."""
    return float(np.mean(sigmas)) if len(sigmas) else math.nan


def vocabulary(documents: Sequence[Sequence[str]], min_count: int = 2, max_words: int = 4000) -> list[str]:
    """Frequent content words of a corpus (alphabetic, > 3 letters), most frequent first, ties by word."""
    counts: dict[str, int] = {}
    for d in documents:
        for s in d:
            for t in content_tokens(s):
                if t.isalpha() and len(t) > 3:
                    counts[t] = counts.get(t, 0) + 1
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return words[:max_words]


def nearest_neighbours(words: Sequence[str], vectors: np.ndarray, k: int = 3, min_cos: float = 0.6, prefix: int = 4) -> dict[str, list[str]]:
    """word -> up to ``k`` derivational variants: other words sharing the first ``prefix`` letters
    whose (normalised) vectors have cosine ≥ ``min_cos`` ("invocation" -> "invoking", "hashing" ->
    "hashable"). Restricting to shared stems keeps antonyms and co-hyponyms out ("larger" ->
    "smaller" and "TypeError" -> "ValueError" are close in embedding space but change the meaning)."""
    V = np.asarray(vectors, dtype=np.float64)
    V = V / np.linalg.norm(V, axis=1, keepdims=True).clip(1e-12)
    groups: dict[str, list[int]] = {}
    for i, w in enumerate(words):
        groups.setdefault(w[:prefix], []).append(i)
    out: dict[str, list[str]] = {}
    for i, w in enumerate(words):
        cand = [j for j in groups[w[:prefix]] if j != i and _stem(words[j]) != _stem(w)]
        cand = sorted((j for j in cand if V[i] @ V[j] >= min_cos), key=lambda j: (-(V[i] @ V[j]), words[j]))[:k]
        if cand:
            out[w] = [words[j] for j in cand]
    return out


_WRAP_RE = re.compile(r"(?<!\n)[ \t]*\n(?!\s*\n)[ \t]*")


def documents_from_texts(texts: Sequence[str]) -> list[list[str]]:
    """Sentences per document for ``perturbation_pairs``: hard-wrapped lines are joined inside each
    paragraph first (so a line break is not taken for a sentence end), then the project's splitter runs."""
    from hcat_pipeline.core.chunking import split_sentences

    return [split_sentences(_WRAP_RE.sub(" ", t)) for t in texts if t and t.strip()]


def train_head_from_pairs(
    pairs: Sequence[Pair], featurize, C: float = 1.0, seed: int = 0, info: dict | None = None, monotone: bool | dict = True
) -> NLIHead:
    """Fit the head on generated pairs; ``featurize(premise_lists, hypotheses) -> (raw, names)``."""
    raw, names = featurize([p.premise for p in pairs], [p.hypothesis for p in pairs])
    y = np.asarray([p.label for p in pairs], dtype=int)
    kinds: dict[str, int] = {}
    for p in pairs:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    return fit_head(raw, y, names, C=C, seed=seed, info={**(info or {}), "kinds": kinds}, monotone=monotone)


def documents_from_chunks(doc_ids: Sequence[str], chunk_indexes: Sequence[int], texts: Sequence[str]) -> list[list[str]]:
    """Sentences per document from the (overlapping) ``chunks`` table: chunks in order, each split
    into sentences, sentences repeated by the overlap kept once."""
    by_doc: dict[str, list[tuple[int, str]]] = {}
    for d, i, t in zip(doc_ids, chunk_indexes, texts):
        by_doc.setdefault(d, []).append((int(i), t or ""))
    out = []
    for d in sorted(by_doc):
        sents: dict[str, None] = {}
        for _, t in sorted(by_doc[d]):
            for s in documents_from_texts([t])[0] if t.strip() else []:
                sents.setdefault(s, None)
        if sents:
            out.append(list(sents))
    return out


def kind_stats(pairs: Sequence[Pair], sigma: np.ndarray) -> list[dict]:
    """Per perturbation kind: count, label, mean σ(D), accuracy of σ(D) > ½ against the label."""
    rows = []
    for kind in sorted({p.kind for p in pairs}):
        idx = [i for i, p in enumerate(pairs) if p.kind == kind]
        lab = pairs[idx[0]].label
        s = np.asarray(sigma)[idx]
        rows.append({"kind": kind, "label": lab, "pairs": len(idx), "mean_sigma": float(s.mean()),
                     "accuracy": float(((s > 0.5).astype(int) == lab).mean())})
    return rows
