"""The campaign's own human labels (the review page, ``data/labels/``) as items that validate the judge.

A label is about one answer: the ``(case_id, system_id)`` answer the reviewer read. Label rows carry no night, so the
answer is the stored one — and only when every stored night that answered that case with that system gave the same
answer; when the answer changed between nights the label cannot be tied to one, and the item is skipped with that
reason (the same rule as the calibration's campaign labels, which take the latest night's score, made strict here
because the judge reads the text itself). The labels come in as their consensus over raters (the caller's
``calibration.agreement.consensus_labels``, a layer above this one); a tie is skipped.

Label → the judge's binary verdict (1 = good): a ``binary`` label as it is; ``ordinal:1-5`` (the judge's own scale) as
label ≥ ``pass_threshold``; any other ordinal scale is skipped with its reason. Only labels that mean what the judge's
dimension means are used (``LABEL_DIMENSIONS``): ``groundedness`` and ``answer_relevancy`` by labels of the same name,
``safety`` by ``toxicity`` labels inverted (1 = toxic there), and the concept chapter's §14.4 items —
``global_coherence``, ``contradiction_detection``, ``cross_lingual_accuracy`` — by labels of their own name (the only
labels those can have). The label store's ``completeness`` means "covers what the passages say", the judge's reads the
reference answer: such labels are skipped with that reason (``NOT_COMPARABLE``). Items are split dev / test by the
same hash as the public sets' (``judge.data.split_of``); figures are reported on test (``held_out``). A caveat for the
reader: labels from the review queue were asked where a metric or the judge was unsure, so κ on them is κ on the hard
cases, not on a random sample. No Dagster here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.judge.data import LabelledItem, split_of
from hcat_pipeline.judge.items import claims_by_case, item_languages

__all__ = ["LABEL_DIMENSIONS", "NOT_COMPARABLE", "RESPONSE_COLUMNS", "campaign_label_items", "held_out", "stored_answers", "stored_claims"]

# judge dimension → (the human label dimension that validates it, whether its labels are inverted)
LABEL_DIMENSIONS: dict[str, tuple[str, bool]] = {
    "groundedness": ("groundedness", False),
    "answer_relevancy": ("answer_relevancy", False),
    "safety": ("toxicity", True),
    "global_coherence": ("global_coherence", False),
    "contradiction_detection": ("contradiction_detection", False),
    "cross_lingual_accuracy": ("cross_lingual_accuracy", False),
}
NOT_COMPARABLE = {
    "completeness": "the label store's completeness means 'covers what the passages say'; the judge's reads the reference answer",
    "correctness": "no label store dimension means the judge's correctness (agreement with the reference answer)",
}
RESPONSE_COLUMNS = ("case_id", "system_id", "golden_set_version", "night", "query", "contexts", "answer", "llm")
SKIPPED_SCHEMA = {"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "reason": pl.String}


def _scan(path: Path, asset: str) -> tuple[pl.LazyFrame, set[str]]:
    try:
        return pl.scan_parquet(path), set(pl.read_parquet_schema(path))
    except (pl.exceptions.PolarsError, OSError) as e:
        raise ValueError(f"stored table {path} of {asset} is unreadable ({type(e).__name__}); re-materialize that partition") from e


def stored_answers(warehouse: str | Path, keys: pl.DataFrame) -> pl.DataFrame:
    """Every stored night's answer (``RESPONSE_COLUMNS``) of the ``keys`` (case_id, system_id), ordered by night then
    golden-set version; a file without ``llm`` (older runs) gives it null; an unreadable file raises naming it."""
    files = sorted(Path(warehouse, "rag_responses").glob("*/*.parquet"))
    scans = []
    for f in files:
        scan, have = _scan(f, "rag_responses")
        scans.append(scan.select([pl.col(c) if c in have else pl.lit(None, pl.String).alias(c) for c in RESPONSE_COLUMNS]))
    if not scans:
        return pl.DataFrame(schema={c: pl.String for c in RESPONSE_COLUMNS} | {"contexts": pl.List(pl.String)})
    out = pl.concat(scans, how="vertical_relaxed").join(keys.lazy(), on=["case_id", "system_id"], how="semi").collect()
    return out.sort("night", "golden_set_version", "case_id", "system_id", maintain_order=True)


def stored_claims(warehouse: str | Path) -> pl.DataFrame | None:
    """case_id and constraints of every stored golden-set version (a case id is a content hash: the same case in two
    versions has the same constraints), or None when none is stored."""
    files = sorted(Path(warehouse, "golden_set").glob("*.parquet"))
    frames = [_scan(f, "golden_set")[0].select("case_id", "constraints").collect() for f in files]
    return pl.concat(frames).unique("case_id", keep="last", maintain_order=True) if frames else None


def held_out(items: Sequence[LabelledItem], dimensions: Sequence[str], cap: int) -> tuple[list[LabelledItem], dict]:
    """The test-split items, at most ``cap`` per dimension (lowest item ids: deterministic), and the counts."""
    kept, over = [], {}
    for d in dimensions:
        mine = sorted((i for i in items if i.dimension == d and i.split == "test"), key=lambda i: i.item_id)
        kept += mine[:cap]
        over[d] = max(0, len(mine) - cap)
    per_dim = {d: sum(i.dimension == d for i in kept) for d in dimensions}
    return kept, {"per_dimension": {d: n for d, n in per_dim.items() if n}, "dev_held_back": sum(i.split == "dev" for i in items),
                  "over_cap": {d: n for d, n in over.items() if n}}  # fmt: skip


def _binary(scale: str, label_index: int, pass_threshold: int) -> tuple[int | None, str | None]:
    if scale == "binary":
        return int(label_index), None
    if scale == "ordinal:1-5":  # the judge's own 1-5 scale: passed the same way the judge's score passes
        return int(label_index + 1 >= pass_threshold), None
    return None, f"scale {scale}: the judge is validated on binary or ordinal:1-5 labels"


def _answers(responses: pl.DataFrame) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for r in responses.filter(pl.col("answer").is_not_null()).iter_rows(named=True):  # in stored_answers' order
        out.setdefault((r["case_id"], r["system_id"]), []).append(r)
    return out


def campaign_label_items(
    consensus: pl.DataFrame, responses: pl.DataFrame, golden_set: pl.DataFrame | None, dimensions: Sequence[str], pass_threshold: int = 4
) -> tuple[list[LabelledItem], pl.DataFrame]:
    """(items, skipped): one ``LabelledItem`` per consensus label of a judge dimension that can be tied to one answer;
    ``skipped`` rows (case_id, system_id, dimension, reason) for the rest — none is dropped silently.

    ``consensus``: one label per (case_id, system_id, dimension) with ``scale``, ``label_index`` and ``tie``
    (``calibration.agreement.consensus_labels``); ``responses``: the stored answers (``RESPONSE_COLUMNS``, every
    stored night); ``golden_set``: case_id and constraints (the comparison cases' claims), or None."""
    skipped: list[dict] = []
    wanted = {LABEL_DIMENSIONS[d][0]: d for d in dimensions if d in LABEL_DIMENSIONS}
    if consensus.height:
        for c in consensus.filter(pl.col("dimension").is_in([d for d in dimensions if d in NOT_COMPARABLE])).iter_rows(named=True):
            skipped.append({"case_id": c["case_id"], "system_id": c["system_id"], "dimension": c["dimension"], "reason": NOT_COMPARABLE[c["dimension"]]})
    mine = consensus.filter(pl.col("dimension").is_in(list(wanted))) if consensus.height else consensus
    if mine.height == 0:
        return [], pl.DataFrame(skipped, schema=SKIPPED_SCHEMA)
    claims, answers, items = claims_by_case(golden_set), _answers(responses), []
    for c in mine.iter_rows(named=True):
        dim = wanted[c["dimension"]]
        key = (c["case_id"], c["system_id"])
        label, why = _binary(c["scale"], c["label_index"], pass_threshold) if not c["tie"] else (None, "raters tie")
        rows = answers.get(key, [])
        if why is None and not rows:
            why = "no stored answer of this system to this case"
        elif why is None and len({(r["query"], tuple(r["contexts"] or ()), r["answer"]) for r in rows}) > 1:
            nights = sorted({r["night"] for r in rows})
            why = f"the answer or its passages changed between nights {nights[0]}..{nights[-1]}: the label cannot be tied to one"
        if why is not None:
            skipped.append({"case_id": key[0], "system_id": key[1], "dimension": dim, "reason": why})
            continue
        r = rows[-1]
        label = 1 - label if LABEL_DIMENSIONS[dim][1] else label
        iid = short_hash("campaign", dim, *key, r["answer"])
        contexts = tuple(r["contexts"] or ())
        items.append(LabelledItem(
            iid, dim, label, r["answer"], r["query"] or "", contexts, r["llm"] or key[1], f"campaign/{r['golden_set_version']}/{r['night']}",
            split_of(iid), claims=claims.get(key[0], ()),
            languages=item_languages(r["answer"], contexts) if dim == "cross_lingual_accuracy" else (),
        ))  # fmt: skip
    return items, pl.DataFrame(skipped, schema=SKIPPED_SCHEMA)
