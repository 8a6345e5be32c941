"""The campaign's own human labels (the review page, ``data/labels/``) as items that validate the judge.

A label is about one answer: the ``(case_id, system_id)`` answer the reviewer read. Label rows carry no night, so the
answer is the stored one — and only when every stored night that answered that case with that system gave the same
answer; when the answer changed between nights the label cannot be tied to one, and the item is skipped with that
reason (the same rule as the calibration's campaign labels, which take the latest night's score, made strict here
because the judge reads the text itself). The labels come in as their consensus over raters (the caller's
``calibration.agreement.consensus_labels``, a layer above this one); a tie is skipped.

Label → the judge's binary verdict (1 = good): a ``binary`` label as it is; ``ordinal:1-5`` (the judge's own scale) as
label ≥ ``pass_threshold``; any other ordinal scale is skipped with its reason. The judge's ``safety`` is validated by
``toxicity`` labels, inverted (1 = toxic there). Every other judge dimension by labels of the same name — so a
reviewer's labels of ``global_coherence``, ``contradiction_detection`` or ``cross_lingual_accuracy`` (concept chapter
§14.4) are what may validate those items. Items are split dev / test by the same hash as the public sets'
(``judge.data.split_of``); figures are reported on test. No Dagster here.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.judge.data import LabelledItem, split_of
from hcat_pipeline.judge.items import case_claims, item_languages

__all__ = ["LABEL_DIMENSIONS", "RESPONSE_COLUMNS", "campaign_label_items"]

# judge dimension → (the human label dimension that validates it, whether its labels are inverted)
LABEL_DIMENSIONS: dict[str, tuple[str, bool]] = {"safety": ("toxicity", True)}
RESPONSE_COLUMNS = ("case_id", "system_id", "golden_set_version", "night", "query", "contexts", "answer", "llm")


def _label_dimension(dim: str) -> tuple[str, bool]:
    return LABEL_DIMENSIONS.get(dim, (dim, False))


def _binary(scale: str, label_index: int, pass_threshold: int) -> tuple[int | None, str | None]:
    if scale == "binary":
        return int(label_index), None
    if scale == "ordinal:1-5":  # the judge's own 1-5 scale: passed the same way the judge's score passes
        return int(label_index + 1 >= pass_threshold), None
    return None, f"scale {scale}: the judge is validated on binary or ordinal:1-5 labels"


def _answers(responses: pl.DataFrame) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for r in responses.filter(pl.col("answer").is_not_null()).sort("night").iter_rows(named=True):
        out.setdefault((r["case_id"], r["system_id"]), []).append(r)
    return out


def campaign_label_items(
    consensus: pl.DataFrame, responses: pl.DataFrame, golden_set: pl.DataFrame | None, dimensions: Sequence[str], pass_threshold: int = 4
) -> tuple[list[LabelledItem], pl.DataFrame]:
    """(items, skipped): one ``LabelledItem`` per consensus label of a judge dimension that can be tied to one answer;
    ``skipped`` rows (case_id, system_id, dimension, reason) for the rest — none is dropped silently.

    ``consensus``: one label per (case_id, system_id, dimension) with ``scale``, ``label_index`` and ``tie``
    (``calibration.agreement.consensus_labels``); ``responses``: the stored answers (``RESPONSE_COLUMNS``, every stored night); ``golden_set``: case_id and
    constraints (the comparison cases' claims), or None."""
    skipped: list[dict] = []
    wanted = {_label_dimension(d)[0]: d for d in dimensions}
    mine = consensus.filter(pl.col("dimension").is_in(list(wanted))) if consensus.height else consensus
    if mine.height == 0:
        return [], pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "reason": pl.String})
    claims = ({r["case_id"]: case_claims(r["constraints"]) for r in golden_set.select("case_id", "constraints").iter_rows(named=True)}
              if golden_set is not None and "constraints" in golden_set.columns else {})  # fmt: skip
    answers, items = _answers(responses), []
    for c in mine.iter_rows(named=True):
        dim = wanted[c["dimension"]]
        key = (c["case_id"], c["system_id"])
        label, why = _binary(c["scale"], c["label_index"], pass_threshold) if not c["tie"] else (None, "raters tie")
        rows = answers.get(key, [])
        if why is None and not rows:
            why = "no stored answer of this system to this case"
        elif why is None and len({r["answer"] for r in rows}) > 1:
            nights = sorted({r["night"] for r in rows})
            why = f"the answer changed between nights {nights[0]}..{nights[-1]}: the label cannot be tied to one"
        if why is not None:
            skipped.append({"case_id": key[0], "system_id": key[1], "dimension": dim, "reason": why})
            continue
        r = rows[-1]
        label = 1 - label if _label_dimension(dim)[1] else label
        iid = short_hash("campaign", dim, *key, r["answer"])
        contexts = tuple(r["contexts"] or ())
        items.append(LabelledItem(
            iid, dim, label, r["answer"], r["query"] or "", contexts, r["llm"] or key[1], f"campaign/{r['golden_set_version']}/{r['night']}",
            split_of(iid), claims=claims.get(key[0], ()),
            languages=item_languages(r["answer"], contexts) if dim == "cross_lingual_accuracy" else (),
        ))  # fmt: skip
    return items, pl.DataFrame(skipped, schema={"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "reason": pl.String})
