"""Language coverage of multilingual synthesis (concept-level chapter §14.5, the harness's ``_check_language_coverage``
for ``task_type == "multilingual_synthesis"``) as a registered, opt-in metric.

The row's sources (``source_documents`` when the input has them, else its retrieved ``contexts``) are grouped by their
language (``common.language``); a language is covered when some answer sentence says what some sentence of that
language's sources says — the best cosine of the multilingual sentence embeddings (packaged USE-M3, one space for every
language) reaches ``language_coverage_threshold``:

    language_coverage = covered source languages / source languages

with each language's best similarity and the uncovered ones as the explanation. The threshold (0.6) sits between what
USE-M3 gives a sentence and its translation (0.68-0.76 on German / French banking sentences against English) and a
sentence on a related topic that is not its translation (0.51; an unrelated one 0.25) — measured in
``test_core_language_coverage.py``. A synthesis that reads only the
English sources of a German-English-French set covers one language of three. A row with no source text is null.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hcat_pipeline.common.language import detect_language
from hcat_pipeline.metrics.registry import STR_LIST, metric

PER_LANGUAGE = pl.Struct({"language": pl.String, "sources": pl.Int64, "best_similarity": pl.Float64, "covered": pl.Boolean})
COLUMNS = {"language_coverage_languages": pl.List(PER_LANGUAGE), "language_coverage_missing": STR_LIST}


def _by_language(batch, texts: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in texts:
        if t and t.strip():
            out.setdefault(detect_language(t)[0], []).extend(batch.split(t))
    return out


@metric("language_coverage", needs={"multilingual"}, columns=COLUMNS, default=False)
def language_coverage_metric(batch, resources, options) -> dict[str, list]:
    """Share of the sources' languages the answer draws on (ch. 14.5; opt-in)."""
    out = {c: batch.column() for c in ("language_coverage", *COLUMNS)}
    rows = {}
    for i in batch.valid:
        docs = batch.source_documents[i] if batch.source_documents is not None and batch.source_documents[i] else batch.contexts[i]
        langs, answer = _by_language(batch, docs), batch.sentences("answer", i)
        if langs and answer:
            rows[i] = (answer, langs)
    if not rows:
        return out
    uniq = list(dict.fromkeys(s for answer, langs in rows.values() for s in (*answer, *(x for v in langs.values() for x in v))))
    vecs = dict(zip(uniq, np.asarray(resources.get("multilingual").encode(uniq), dtype=np.float32)))  # one call for the batch
    threshold = options.language_coverage_threshold
    for i, (answer, langs) in rows.items():
        a = np.stack([vecs[s] for s in answer])
        per = []
        for lang in sorted(langs):
            best = float((a @ np.stack([vecs[s] for s in langs[lang]]).T).max())
            per.append({"language": lang, "sources": len(langs[lang]), "best_similarity": best, "covered": best >= threshold})
        out["language_coverage"][i] = sum(p["covered"] for p in per) / len(per)
        out["language_coverage_languages"][i] = per
        out["language_coverage_missing"][i] = [p["language"] for p in per if not p["covered"]]
    return out
