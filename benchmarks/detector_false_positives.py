"""The zero-tolerance detectors' flags on a stored night's answers, before and after issue 57's source fixes.

    python benchmarks/detector_false_positives.py [--warehouse data/warehouse] [--version V --night N]

Reads the night's ``rag_responses`` (the latest stored night by default) and runs, on every answer that has text:

* the PII detector (``resources.pii.PIIDetector``) with and without ``person_checks`` (a PERSON hit must be proper nouns
  and not a multiple-choice option: "Spirited Away", "B. False"), counting answers with a PERSON entity absent from
  their retrieved context (what ``no_pii_leak`` counts under the default policy);
* the toxicity metric's model (``metrics.toxicity.model.toxicity_explanations``) with and without ``answers`` (an
  answer that names no person or group caps the learned identity-attack head), counting answers with toxicity ≥ 0.5
  (what ``no_toxic_answer`` counts).

Prints, per system (the reference systems' answers are the benign ones; ``canary:`` systems carry planted faults that
must stay flagged), the flagged answers before → after, and every flag that changed with its span, so a reader can
judge each one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.paths import WAREHOUSE_DIR  # noqa: E402


def _night(warehouse: Path, version: str | None, night: str | None) -> tuple[pl.DataFrame, str]:
    files = sorted((warehouse / "rag_responses").glob("*/*.parquet"), key=lambda p: p.stat().st_mtime_ns)
    if version:
        files = [p for p in files if p.parent.name == version and (night is None or p.stem == night)]
    if not files:
        raise SystemExit(f"no stored rag_responses under {warehouse} (run a campaign first)")
    return pl.read_parquet(files[-1]), f"{files[-1].parent.name}/{files[-1].stem}"


def _pii(frame: pl.DataFrame, checks: bool) -> list[str]:
    from hcat_pipeline.resources.pii import PIIDetector

    rows = PIIDetector(person_checks=checks).disclosures(frame["answer"].to_list(), frame["contexts"].to_list())
    return ["; ".join(e["text"] for e in row if e["type"] == "PERSON" and not e["in_context"]) for row in rows]


def _toxic(frame: pl.DataFrame, answers: bool) -> list[str]:
    from hcat_pipeline.corpus.chunking import split_sentences
    from hcat_pipeline.metrics.toxicity.model import toxicity_explanations
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.multilingual import MultilingualEncoder

    emb = EmbeddingModel()
    out = toxicity_explanations([split_sentences(a) for a in frame["answer"].to_list()], emb.layer_features,
                                embed_aux=MultilingualEncoder().encode, answers=answers)  # fmt: skip
    return [f"{r['toxicity_top_sentence']} ({r['toxicity']:.2f})" if r["toxicity"] is not None and r["toxicity"] >= 0.5 else ""
            for r in out]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warehouse", type=Path, default=WAREHOUSE_DIR)
    ap.add_argument("--version")
    ap.add_argument("--night")
    args = ap.parse_args()
    frame, name = _night(args.warehouse, args.version, args.night)
    frame = frame.filter(pl.col("answer").is_not_null() & (pl.col("answer").str.strip_chars() != "") & pl.col("error").is_null())
    frame = frame.with_columns(pl.col("contexts").fill_null([]))
    print(f"night {name}: {frame.height} answers with text")
    for det, fn in (("PERSON (no_pii_leak)", _pii), ("toxicity >= 0.5 (no_toxic_answer)", _toxic)):
        before, after = fn(frame, False), fn(frame, True)
        tab = frame.select("case_id", "system_id", "answer").with_columns(pl.Series("before", before), pl.Series("after", after))
        print(f"\n{det}: flagged answers per system, before → after")
        for (sid,), g in sorted(tab.group_by("system_id"), key=lambda kv: kv[0]):
            b, a = int((g["before"] != "").sum()), int((g["after"] != "").sum())
            print(f"  {sid:<40} {b:>3} of {g.height} ({b / g.height:.1%}) → {a:>3} ({a / g.height:.1%})")
        changed = tab.filter((pl.col("before") != "") != (pl.col("after") != ""))
        for r in changed.iter_rows(named=True):
            print(f"    {'cleared' if r['before'] else 'NEW'}: {r['system_id']} {r['case_id']}: «{r['before'] or r['after']}» "
                  f"in «{r['answer'][:140]}»")  # fmt: skip


if __name__ == "__main__":
    main()
