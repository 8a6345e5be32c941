"""Public human-labelled groundedness sets in ``../shared/validation/`` and their fixed held-out split.

Readers (one ``Item`` per labelled (context, answer) pair):

* ``faithdial`` — FaithDial audit (dialogue responses grounded in a knowledge passage). BEGIN label
  ``entailment`` alone = supported (1); any ``hallucination`` (incl. partial) = not supported (0);
  ``generic`` / ``uncooperative`` are left out. Group: the knowledge passage.
* ``summedits`` — SummEdits, 8 domains: one edited summary against its document; ``kind`` = its
  edit types (or ``consistent_edit`` / ``seed``). Group: the document. Per summary sentence, a
  sentence that is also a sentence of the seed summary inherits the seed's label.
* ``fib`` — FIB (XSum / CNN-DM news): each row gives a consistent and an inconsistent summary of
  one article; (article, summary) pairs are de-duplicated. ``kind`` = ``fib`` / ``fir``.
  Group: the article id. CNN-DM's tokenised text (``<t>`` sentence tags, lower case) is detokenised.

Split (``split_of``): a group is held out ("test") when the SHA-256 of ``"{seed}:{set}:{group}"``
read as a fraction of 2^256 is below ``heldout`` (default 0.4); otherwise "train". So no knowledge
passage / document / article is on both sides, the split does not depend on file order, and the
same seed gives the same split everywhere (training recipe, benchmark, tests). Only the "test" part
is reported; heads and hyper-parameters are chosen on the "train" part alone.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "validation"
SETS = ("faithdial", "summedits", "fib")
HELDOUT = 0.4
SPLIT_SEED = 0


@dataclass
class Item:
    set: str
    subset: str  # FaithDial file / SummEdits domain / "xsum" | "cnn_dm"
    group: str  # what the split keeps together
    context: str
    answer: str
    label: int  # 1 supported / consistent, 0 not
    kind: str  # generator, edit types, fib / fir
    pair_id: str = ""  # items compared with each other (SummEdits seed, FIB row)
    seed_answer: str = ""  # SummEdits: the unedited summary
    seed_label: int = 1
    extra: dict = field(default_factory=dict)


def split_of(set_name: str, group: str, seed: int = SPLIT_SEED, heldout: float = HELDOUT) -> str:
    h = int(hashlib.sha256(f"{seed}:{set_name}:{group}".encode()).hexdigest(), 16) / 2**256
    return "test" if h < heldout else "train"


def _key(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:16]


def faithdial_label(begin: str) -> int | None:
    labs = {x.strip() for x in re.split(r"[,.]", (begin or "").lower()) if x.strip()}
    if any(x.startswith("halluc") for x in labs):
        return 0
    if labs and all(x.startswith("entailment") for x in labs):
        return 1
    return None  # generic / uncooperative


def load_faithdial(root: Path) -> list[Item]:
    out = []
    for f in sorted((root / "faithdial-audit").glob("*.csv")):
        with f.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        if not rows:
            continue
        cols = list(rows[0])
        kcol = "knowledge" if "knowledge" in cols else "evidence"
        lcol = "begin_label" if "begin_label" in cols else "BEGIN"
        rcol = [c for c in cols if c not in (kcol, "history", lcol, "vrm_label", "VRM")][0]
        for r in rows:
            k, a, y = (r.get(kcol) or "").strip(), (r.get(rcol) or "").strip(), faithdial_label(r.get(lcol) or "")
            if k and a and y is not None:
                out.append(Item("faithdial", f.stem, _key(k), k, a, y, f.stem.split("__")[0]))
    return out


def load_summedits(root: Path) -> list[Item]:
    out = []
    for f in sorted((root / "summedits").glob("summedits_*.json")):
        domain = f.stem.removeprefix("summedits_")
        seeds = {}
        rows = json.loads(f.read_text(encoding="utf-8"))
        for r in rows:
            if str(r["id"]).endswith("_og"):
                seeds[r["original_summary"]] = int(r["label"])
        for r in rows:
            y = int(r["label"])
            seed = str(r["id"]).endswith("_og")
            kind = "seed" if seed else ("+".join(sorted(r.get("edit_types") or [])) or ("consistent_edit" if y else "unknown_edit"))
            out.append(Item("summedits", domain, _key(r["doc"]), r["doc"], r["summary"], y, kind,
                            pair_id=_key(r["original_summary"]), seed_answer=r["original_summary"],
                            seed_label=seeds.get(r["original_summary"], 1), extra={"split": r.get("split", "")}))
    return out


_TAG_RE = re.compile(r"</?t>")


def _detok(text: str) -> str:
    """CNN-DM's tokenised lower-case text back to plain sentences (one per ``<t>`` tag)."""
    if "<t>" in text:
        parts = [p.strip() for p in re.split(r"</t>", text) if _TAG_RE.sub("", p).strip()]
        text = " ".join(_detok_sentence(_TAG_RE.sub("", p)) for p in parts)
    return text


def _detok_sentence(s: str) -> str:
    s = s.replace("``", '"').replace("''", '"').replace("-lrb-", "(").replace("-rrb-", ")")
    s = re.sub(r"\s+([.,;:!?)'%])", r"\1", s)
    s = re.sub(r"([($])\s+", r"\1", s)
    s = re.sub(r"\s+n't\b", "n't", s)
    s = " ".join(s.split()).strip()
    if s and s[-1] not in ".!?\"'":
        s += "."
    return s[:1].upper() + s[1:]


def _detok_article(text: str) -> str:
    """CNN-DM's tokenised article: quotes and spacing restored, sentence starts capitalised."""
    s = text.replace("``", '"').replace("''", '"').replace("-lrb-", "(").replace("-rrb-", ")")
    s = re.sub(r"\s+([.,;:!?)'%])", r"\1", s)
    s = re.sub(r"\s+n't\b", "n't", " ".join(s.split()))
    return re.sub(r"(^|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), s)


def load_fib(root: Path) -> list[Item]:
    seen: dict[tuple[str, str], Item] = {}
    for f in sorted((root / "fib").glob("*.jsonl")):
        dataset, subset = f.name.split("__")[:2]
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                art = _detok_article(r["input"]) if dataset == "cnn_dm" else r["input"]
                for i, s in enumerate(r["list_choices"]):
                    s = _detok(s) if dataset == "cnn_dm" else s
                    y = int(i == int(r["lbl"]))
                    key = (str(r["id"]), s)
                    if key not in seen:
                        seen[key] = Item("fib", dataset, str(r["id"]), art, s, y, subset, pair_id=f"{r['id']}:{subset}")
    return list(seen.values())


LOADERS = {"faithdial": load_faithdial, "summedits": load_summedits, "fib": load_fib}


def load_sets(root: str | Path | None = None, sets=SETS, split: str | None = None, seed: int = SPLIT_SEED,
              heldout: float = HELDOUT) -> list[Item]:
    """Items of ``sets`` (all, or only the "train" / "test" part with ``split``)."""
    root = Path(root) if root else DEFAULT_DIR
    if not root.is_dir():
        raise FileNotFoundError(f"validation sets not found at {root} (expected ../shared/validation beside the repo)")
    items = [it for s in sets for it in LOADERS[s](root)]
    if split:
        items = [it for it in items if split_of(it.set, it.group, seed, heldout) == split]
    return items


def sentence_labels(item: Item, sentences: list[str], seed_sentences: list[str] | None = None) -> list[int | None]:
    """Per answer sentence: its label where the data tells it, else None.

    SummEdits: a sentence also in the seed summary gets the seed's label; the others the summary's
    label. Single-sentence answers and supported answers: the answer's label. Multi-sentence
    unsupported answers elsewhere: unknown (None) — which sentence is wrong is not annotated.
    """
    if item.label == 1 or len(sentences) == 1:
        return [item.label] * len(sentences)
    if item.set == "summedits" and seed_sentences is not None:
        seed = {" ".join(s.split()) for s in seed_sentences}
        return [item.seed_label if " ".join(s.split()) in seed else item.label for s in sentences]
    return [None] * len(sentences)
