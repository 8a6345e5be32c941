"""Generalisation bounds (golden-eval §3.5.3): the test setting every headline result of a night holds for, and what
it does not speak for. Pure: the golden set, the responses and the version's manifest in; a report section and the
console's line out.

"Some AI evaluation results are unjustifiably generalized beyond the test setting" (NIST CAISI §I-B, quoted there): so
each aspect of the setting is read from the night's own tables — the corpus hash the cases came from, the topic strata
that hold a case against those the corpus has, the query types and categories present against the ones the generator
knows, the languages of the questions (``langid``, the same reader the format checks use), each system's configuration
(its ``config_hash``: a changed prompt, model, retriever or top_k is another system) and the night — and what lies
outside it is named, not implied.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from hcat_pipeline.golden.cases import CATEGORIES, QUERY_TYPES
from hcat_pipeline.reports.campaign_report import Section

_SYSTEM_COLUMNS = ("retriever", "top_k", "model", "prompt", "prompt_hash")


def _counts(values) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(Counter(v for v in values if v is not None).items(), key=lambda kv: (-kv[1], kv[0])))


def _languages(queries: list[str]) -> Counter:
    from hcat_pipeline.common.language import detect_language

    return Counter(detect_language(q)[0] for q in queries if q and len(q.split()) >= 3)


def _strata(golden: pl.DataFrame, manifest: dict | None) -> tuple[str, str]:
    gen = (manifest or {}).get("provenance", {}).get("generation") or {}
    labels = {str(k): v for k, v in (gen.get("stratum_labels") or {}).items()}
    have = {str(s) for s in golden["stratum"].drop_nulls().to_list()} if "stratum" in golden.columns else set()
    known = set(labels) | {str(k) for k in (gen.get("kept_per_stratum") or {})}
    held = f"{len(have)} topic strata" + (f" of the corpus's {len(known)}" if known else "")
    missing = sorted(known - have, key=lambda s: (len(s), s))
    name = lambda s: f"{s} ({labels[s]})" if s in labels else s  # noqa: E731
    return held, ("strata with no case: " + ", ".join(map(name, missing))) if missing else "topics the corpus does not hold"


def _systems(responses: pl.DataFrame) -> list[str]:
    cols = [c for c in _SYSTEM_COLUMNS if c in responses.columns]
    out = []
    for sid in sorted(responses["system_id"].unique().to_list()):
        part = responses.filter(pl.col("system_id") == sid)
        hashes = sorted({h for h in part["config_hash"].to_list() if h}) if "config_hash" in part.columns else []
        extra = "; ".join(f"{c}={v}" for c in cols if (v := next((x for x in part[c].to_list() if x is not None), None)) is not None)
        out.append(f"{sid} (config {', '.join(hashes) or 'unrecorded'}{'; ' + extra if extra else ''})")
    return out


def setting_bounds(golden: pl.DataFrame, responses: pl.DataFrame, manifest: dict | None, night: str) -> tuple[Section, str]:
    """(the "Test setting" section: aspect, holds for, does not speak for; the console's one line)."""
    corpora = sorted(set(golden["corpus_hash"].drop_nulls().to_list())) if "corpus_hash" in golden.columns else []
    held, not_held = _strata(golden, manifest)
    types = set(golden["query_type"].drop_nulls().to_list()) if "query_type" in golden.columns else set()
    cats = set(golden["category"].drop_nulls().to_list())
    langs = _languages(golden["query"].to_list())
    other_langs = "questions in any other language" if langs else "any language (none read)"
    systems = _systems(responses)
    rows = [
        ["corpus", f"corpus hash {', '.join(c[:12] for c in corpora) or 'unrecorded'}", "another corpus, or this one once its documents change"],
        ["topics", held, not_held],
        ["query types", _counts(golden["query_type"].to_list()) if types else "–",
         ", ".join(t for t in QUERY_TYPES if t not in types) or "types the generator does not make"],
        ["categories", _counts(golden["category"].to_list()), ", ".join(c for c in CATEGORIES if c not in cats) or "–"],
        ["languages", _counts(langs.elements()) or "–", other_langs],
        ["systems", "; ".join(systems) or "–", "any other configuration (a changed prompt, model, retriever or top_k is another config hash)"],
        ["cases and traffic", f"{golden.height} cases of version {golden['version'][0] if 'version' in golden.columns and golden.height else '?'}, "
         "each stratum and category as the golden set mixes them", "the live traffic's mix (the monitoring pages weigh by it), questions unlike these"],
        ["time", f"answers given on the night of {night}", "answers on a later night: systems, corpora and models change"],
    ]  # fmt: skip
    line = (f"Test setting (golden-eval §3.5.3): these results hold for corpus {', '.join(c[:12] for c in corpora) or '?'}, {held}, "
            f"{len(types)} query types, {len(langs) or 0} question language(s) ({', '.join(sorted(langs)) or '–'}), "
            f"{len(systems)} system configuration(s), the night of {night} — not for {not_held} or other corpora and configurations.")  # fmt: skip
    section = Section("test_setting", "Test setting: what these results hold for", columns=["aspect", "holds for", "does not speak for"],
                      rows=rows, note="golden-eval §3.5.3 (generalization bounds): every figure on this page is measured in this "
                      "setting only; read from the night's own tables.")  # fmt: skip
    return section, line
