"""The maintainers' review shipped with a campaign (issue 59): the curate page's decisions on one generated version,
applied at campaign time so the night's gates read reviewed cases only.

A campaign file's ``shipped_review`` names a folder holding ``<version>.decisions.jsonl`` (the file the curate page
writes, ``review.curation.CurationLog``) and ``<version>.generator.json`` (``generator_fingerprint`` of the generation
that made the version, written by ``ship_review``). At campaign time:

* the generated version has a shipped review ⇒ its decisions are applied and the result frozen as a curated version
  (``<version>-reviewed-<hash of the decisions>``, ``review.curation.freeze_curated``: rejected cases leave, edits make new
  cases, each kept case stamped with who reviewed it when) — the night reads that version;
* it has none, but a shipped review decides some of its cases (a case id is a hash of the case's content: the same id is
  the same case, so its decision stands — the generator's output moved on part of the set, e.g. where this machine's
  int8 / float arithmetic tips a selection threshold the other way) ⇒ those decisions are applied as above, the rest of
  the version stays unreviewed, and the note says "SHIPPED REVIEW PARTLY APPLIED" in capitals with the counts;
* no shipped decision names any of its cases (the generator or the corpus changed, so the case ids moved) ⇒
  ``ShippedReview.note`` says so in capitals, on the console's first screen and the report's (the gates then read no
  reviewed case: every gate is INDETERMINATE); ``test_shipped_review`` fails on a change to the generator — the
  fingerprint moved — so the review is redone before it lands.

No Dagster import.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.review.curation import CurationLog, freeze_curated

__all__ = ["ShippedReview", "apply_shipped_review", "campaign_fingerprint", "generator_fingerprint", "recorded_fingerprint", "ship_review",
           "shipped_versions"]

DECISIONS = ".decisions.jsonl"
GENERATOR = ".generator.json"
_PACKAGE = Path(__file__).resolve().parents[1]
# what decides a generated version's case ids: the generation and corpus code, the generator's prompts (not the judge's,
# the exam's or the review page's)
_GENERATION_SOURCES = ("golden/*.py", "corpus/*.py", "prompts/query_*.txt", "prompts/paraphrase_*.txt", "prompts/colloquial_*.txt")
_NOT_GENERATION = {"golden/review.py", "golden/review_order.py", "golden/sample_review.py"}  # reading cases, not making them


@dataclass(frozen=True)
class ShippedReview:
    version: str  # the version the night reads: the curated one, or the generated one when no review matches
    matched: bool
    note: str  # for the console's and the report's first screen


def generator_fingerprint(generation_config: dict, corpus_hash: str, model: str) -> str:
    """16 hex digits over what decides a generated version's cases: the sources and prompts of the generation
    (``_GENERATION_SOURCES``), the generation run config, the corpus hash and the generator model."""
    h = hashlib.sha256()
    for pattern in _GENERATION_SOURCES:
        for path in sorted(_PACKAGE.glob(pattern)):
            rel = path.relative_to(_PACKAGE).as_posix()
            if rel not in _NOT_GENERATION:
                h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(json.dumps(generation_config, sort_keys=True, default=str).encode())
    h.update(f"\0{corpus_hash}\0{model}".encode())
    return h.hexdigest()[:16]


def campaign_fingerprint(spec) -> str:
    """``generator_fingerprint`` of a campaign file's generation (``campaign_spec.CampaignSpec``): its run config, the
    corpus it reads (hashed as the golden set records it) and the packaged generator model."""
    from hcat_pipeline.campaign_spec import corpus_sources, generation_run_config
    from hcat_pipeline.corpus.ingest import ingest
    from hcat_pipeline.golden.cases import corpus_hash
    from hcat_pipeline.models import GENERATOR_MODEL

    docs, _, _ = ingest(**corpus_sources(spec.corpus))
    config = generation_run_config(spec)
    return generator_fingerprint(config, corpus_hash(docs["doc_id"].to_list()), (spec.generation.llm and spec.generation.llm.model_path) or GENERATOR_MODEL)


def shipped_versions(review_dir: str | Path) -> list[str]:
    """The generated versions whose review the folder ships."""
    d = Path(review_dir)
    return sorted(p.name[: -len(DECISIONS)] for p in d.glob(f"*{DECISIONS}")) if d.is_dir() else []


def ship_review(curation_dir: str | Path, version: str, review_dir: str | Path, fingerprint: str) -> Path:
    """Copy the curate page's decisions on ``version`` into ``review_dir`` with the generator's fingerprint; the path written.
    FileNotFoundError when nobody has decided a case of it."""
    src = Path(curation_dir) / f"{version}{DECISIONS}"
    if not src.is_file():
        raise FileNotFoundError(f"no decisions on {version} in {curation_dir} (review it on the curate page first)")
    out = Path(review_dir)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, out / src.name)
    (out / f"{version}{GENERATOR}").write_text(json.dumps({"version": version, "generator_fingerprint": fingerprint}, indent=1) + "\n")
    return out / src.name


def recorded_fingerprint(review_dir: str | Path, version: str) -> str | None:
    path = Path(review_dir) / f"{version}{GENERATOR}"
    return json.loads(path.read_text())["generator_fingerprint"] if path.is_file() else None


def apply_shipped_review(review_dir: str | Path, version: str, golden_dir: str | Path, work_dir: str | Path, check=None) -> ShippedReview:
    """The version tonight reads (module docstring). ``work_dir``: where the decisions are copied to be applied (the
    curated file is written beside them, never into the shipped folder). Refusals of the freeze propagate."""
    from hcat_pipeline.golden.cases import load_version
    from hcat_pipeline.golden.review import review_summary

    src = Path(review_dir) / f"{version}{DECISIONS}"
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    partly = ""
    if src.is_file():
        shutil.copyfile(src, work / src.name)
    else:  # another version: its decisions on the cases this one holds too (a case id is its content) still stand
        have = shipped_versions(review_dir)
        ids = set(load_version(version, golden_dir)[0]["case_id"].to_list())
        lines = [ln for v in have for ln in (Path(review_dir) / f"{v}{DECISIONS}").read_text(encoding="utf-8").splitlines(keepends=True)
                 if ln.strip() and json.loads(ln)["case_id"] in ids]  # fmt: skip
        if not lines:
            return ShippedReview(version, False, (
                f"SHIPPED REVIEW NOT APPLIED: {review_dir} holds the review of {', '.join(have) or 'no version'}, not of {version} — "
                "the generator or the corpus changed, so tonight's cases are unreviewed; review them on the curate page and ship "
                "the decisions (hcat ship-review VERSION)"))  # fmt: skip
        (work / src.name).write_text("".join(lines), encoding="utf-8")
        decided = len({json.loads(ln)["case_id"] for ln in lines})
        partly = (f"SHIPPED REVIEW PARTLY APPLIED: the shipped review of {', '.join(have)} decides {decided} of the {len(ids)} cases "
                  f"of {version} (the same case id is the same case); the other {len(ids) - decided} were generated differently — "
                  "the generator, the corpus, or this machine's libraries or arithmetic changed them — and are unreviewed: review them on the "
                  "curate page and ship the decisions (hcat ship-review VERSION). ")  # fmt: skip
    log = CurationLog(work, version)
    curated = f"{version}-reviewed-{short_hash((work / src.name).read_text(encoding='utf-8'), n=6)}"
    if not (Path(golden_dir) / curated).is_dir():
        raters = sorted({e["rater"] for e in log.entries()})
        freeze_curated(log, golden_dir, curated, check, ", ".join(raters))
    frame, manifest = load_version(curated, golden_dir)
    s = review_summary(frame, "reviewed")
    prov = manifest.get("provenance") or manifest
    count = lambda k: len(v) if isinstance(v := prov.get(k, 0), (dict, list)) else int(v or 0)  # noqa: E731 (a count or the cases)
    note = partly + (f"{s['n_reviewed']} reviewed cases (by {', '.join(s['reviewers'])}, on {s['last_reviewed_at']}): the shipped review "
            f"of {version} — {count('rejected')} rejected, {count('edited')} edited, {count('left_with_their_base')} left with their base")  # fmt: skip
    return ShippedReview(curated, True, note)
