"""Human-labelled items for validating the LLM judge, from the public sets in ``../shared/validation/``.

* groundedness ← FaithDial audit (MIT): the knowledge passage is the context, the previous turn the
  query, a model's (GPT2 / DoHA / CTRL) or the gold response the answer. Label 1 (supported) when the
  BEGIN label is ``entailment`` only; 0 when it contains ``hallucination`` / ``partial hallucination``
  (``hallucinated`` spelled so once); ``generic`` / ``uncooperative``-only rows are left out (the
  folder README's rule). The system column (``gpt2``, ``doha``, ``ctrl``, ``human``) feeds the
  self-preference audit.
* safety ← ToxiGen demonstrations (MIT): ``hate`` files are label 0 (unsafe), ``neutral`` files 1.
* position-bias pairs ← FaithDial: the same knowledge + previous turn answered by two models, one
  supported and one not (humans prefer the supported one).

Held out: every item (and pair) goes to ``dev`` or ``test`` by a hash of its content (20 % dev), so
the split never changes; prompts may be looked at on ``dev`` only, figures are reported on ``test``.
``sample_items`` draws a seeded sample balanced over labels. No Dagster here.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.paths import PROJECT_ROOT

__all__ = ["DEFAULT_VALIDATION_DIR", "LabelledItem", "faithdial_items", "toxigen_items", "faithdial_pairs", "sample_items", "split_of"]

DEFAULT_VALIDATION_DIR = Path(os.environ.get("HCAT_VALIDATION_DIR", PROJECT_ROOT.parent / "shared" / "validation"))
DEV_SHARE = 5  # 1 in 5 items is dev


@dataclass(frozen=True)
class LabelledItem:
    item_id: str
    dimension: str  # the judge dimension the human label is about
    label: int  # 1 = good (supported / safe), 0 = bad
    answer: str
    query: str
    contexts: tuple[str, ...]
    system: str  # who wrote the answer: gpt2 | doha | ctrl | human | toxigen
    source: str  # reference:<set>/<file>
    split: str  # dev | test
    claims: tuple[str, ...] = ()  # contradiction_detection: the case's true and false claim
    languages: tuple[str, ...] = ()  # cross_lingual_accuracy: the languages of the answer and its passages


def split_of(item_id: str) -> str:
    return "dev" if int(item_id[:8], 16) % DEV_SHARE == 0 else "test"


def _faithdial_label(begin: str | None) -> int | None:
    if not begin:
        return None
    parts = {p.strip().lower().rstrip(".") for p in begin.replace(".", ",").split(",") if p.strip()}
    if any(p.startswith("hallucin") or p == "partial hallucination" for p in parts):
        return 0
    if parts == {"entailment"}:
        return 1
    return None  # generic / uncooperative (with or without entailment): left out


def _faithdial_frames(validation_dir: Path) -> list[tuple[str, str, pl.DataFrame]]:
    folder = Path(validation_dir) / "faithdial-audit"
    if not folder.is_dir():
        raise FileNotFoundError(f"FaithDial audit not found at {folder} (set HCAT_VALIDATION_DIR or the asset's validation_dir)")
    out = []
    for path in sorted(folder.glob("*.csv")):
        df = pl.read_csv(path, infer_schema=False)
        if path.name.startswith("gold__"):
            df = df.rename({"evidence": "knowledge", "response": "answer", "BEGIN": "begin_label"})
            system = "human"
        else:
            system = path.name.split("__")[0].lower()
            df = df.rename({system: "answer"})
        out.append((system, path.name, df.select("knowledge", "history", "answer", "begin_label")))
    return out


def faithdial_items(validation_dir: str | Path = DEFAULT_VALIDATION_DIR) -> list[LabelledItem]:
    items, seen = [], set()
    for system, name, df in _faithdial_frames(Path(validation_dir)):
        for r in df.iter_rows(named=True):
            label = _faithdial_label(r["begin_label"])
            if label is None or not r["answer"] or not r["knowledge"]:
                continue
            iid = short_hash("faithdial", r["knowledge"], r["history"] or "", r["answer"])
            if iid in seen:
                continue
            seen.add(iid)
            items.append(LabelledItem(iid, "groundedness", label, r["answer"].strip(), (r["history"] or "").strip(),
                                      (r["knowledge"].strip(),), system, f"reference:faithdial/{name}", split_of(iid)))  # fmt: skip
    return items


def toxigen_items(validation_dir: str | Path = DEFAULT_VALIDATION_DIR) -> list[LabelledItem]:
    folder = Path(validation_dir) / "toxigen-demonstrations"
    if not folder.is_dir():
        raise FileNotFoundError(f"ToxiGen demonstrations not found at {folder} (set HCAT_VALIDATION_DIR or the asset's validation_dir)")
    items, seen = [], set()
    for path in sorted(folder.glob("*.txt")):
        if path.name.startswith("LICENSE"):
            continue
        kind = path.name.split("__", 1)[1]
        label = 0 if kind.startswith("hate") else 1 if kind.startswith("neutral") else None
        if label is None:
            raise ValueError(f"{path}: file name says neither hate nor neutral")
        for line in path.read_text(encoding="utf-8").splitlines():
            text = line.strip().lstrip("-").strip()
            if not text:
                continue
            iid = short_hash("toxigen", text.lower())
            if iid in seen:
                continue
            seen.add(iid)
            items.append(LabelledItem(iid, "safety", label, text, "", (), "toxigen", f"reference:toxigen/{path.name}", split_of(iid)))
    return items


def faithdial_pairs(validation_dir: str | Path = DEFAULT_VALIDATION_DIR) -> list[dict]:
    """Pairs (same knowledge + previous turn, two model responses, one supported, one not):
    ``pair_id``, ``x`` (supported), ``y`` (not), ``query``, ``contexts``, ``human`` = "X", ``split``."""
    by_turn: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for system, _, df in _faithdial_frames(Path(validation_dir)):
        if system == "human":
            continue
        for r in df.iter_rows(named=True):
            label = _faithdial_label(r["begin_label"])
            if label is not None and r["answer"] and r["knowledge"]:
                by_turn.setdefault((r["knowledge"].strip(), (r["history"] or "").strip()), []).append((r["answer"].strip(), label))
    pairs = []
    for (knowledge, history), answers in by_turn.items():
        good = [a for a, lab in answers if lab == 1]
        bad = [a for a, lab in answers if lab == 0]
        if good and bad:
            pid = short_hash("faithdial-pair", knowledge, history, good[0], bad[0])
            pairs.append({"pair_id": pid, "x": good[0], "y": bad[0], "query": history, "contexts": (knowledge,), "human": "X",
                          "split": split_of(pid)})  # fmt: skip
    return sorted(pairs, key=lambda p: p["pair_id"])


def sample_items(items: Sequence[LabelledItem], n_per_label: int, split: str = "test", seed: int = 0) -> list[LabelledItem]:
    """A seeded sample of ``split`` with up to ``n_per_label`` items of each label (in item-id order first,
    so the sample does not depend on file order)."""
    rng = random.Random(seed)
    out = []
    for label in sorted({i.label for i in items}):
        pool = sorted((i for i in items if i.split == split and i.label == label), key=lambda i: i.item_id)
        out.extend(rng.sample(pool, min(n_per_label, len(pool))))
    return sorted(out, key=lambda i: i.item_id)
