"""Training / evaluation data for the toxicity head: the public human-labelled sets in
``../shared/validation/`` (Latent Hatred ``implicit-hate/`` and ToxiGen ``toxigen-demonstrations/``),
cleaned, de-duplicated and split so that near-duplicates never straddle train / validation / test.

Pure (numpy / stdlib); the sentence embeddings used to find near-duplicates come in as an array.

Split protocol (``assign_splits``), documented because every reported figure depends on it:

1. texts are cleaned (``clean_post``: tweet debris, quotes, ``rt``, handles, urls) and keyed by
   ``text_key`` (lower case, letters and digits only); a key seen with two labels is dropped, a key
   seen twice with one label is kept once (``dedupe``);
2. near-duplicates — cosine ≥ ``threshold`` (0.92) between MiniLM embeddings, or the same key —
   are joined into one group (union-find over the pairs, ``near_duplicate_groups``);
3. each group goes to one split by a seeded hash of the group's smallest key, stratified by
   (source, label) through the hash's rank within that stratum: ``test`` 25 %, ``val`` 15 %,
   ``train`` 60 % (seed 13). The test split is only ever used for the reported tables.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

IMPLICIT_HATE_STG1 = "implicit_hate_v1_stg1_posts.tsv"
IMPLICIT_HATE_STG2 = "implicit_hate_v1_stg2_posts.tsv"
SPLIT_FRACTIONS = (("test", 0.25), ("val", 0.15), ("train", 0.60))
SPLIT_SEED = 13
NEAR_DUPLICATE_COSINE = 0.92


@dataclass(frozen=True)
class Example:
    text: str
    label: int  # 1 = hateful / toxic, 0 = not
    source: str  # "implicit-hate" | "toxigen"
    kind: str  # implicit-hate: implicit_hate / explicit_hate / not_hate; toxigen: hate / neutral
    group: str = ""  # toxigen: target group from the file name (e.g. "race:black"); implicit-hate: ""
    implicit_class: str = ""  # implicit-hate stage-2 class of an implicit_hate post, when known


_URL = re.compile(r"https?://\S+|www\.\S+")
_HANDLE = re.compile(r"@\w+")
_RT = re.compile(r"^(?:\s*(?:rt|:)\s*)+", re.IGNORECASE)
_QUOTES = re.compile(r"\"+")
_SPACE = re.compile(r"\s+")
_KEY = re.compile(r"[^a-z0-9]+")


def clean_post(text: str) -> str:
    """Tweet debris out: urls, @handles, the CSV quote runs, a leading ``rt :``; spaces collapsed."""
    t = _URL.sub(" ", text)
    t = _HANDLE.sub(" ", t)
    t = _QUOTES.sub(" ", t)
    t = _SPACE.sub(" ", t).strip()
    t = _RT.sub("", t).strip(" :")
    return _SPACE.sub(" ", t).strip()


def text_key(text: str) -> str:
    return _KEY.sub(" ", text.lower()).strip()


def _read_tsv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def load_implicit_hate(folder: str | Path) -> list[Example]:
    """Stage-1 posts with their class; implicit posts carry their stage-2 class when stage 2 has
    the post (joined on ``text_key`` of the cleaned text)."""
    folder = Path(folder)
    stg2: dict[str, str] = {}
    p2 = folder / IMPLICIT_HATE_STG2
    if p2.exists():
        for r in _read_tsv(p2):
            stg2.setdefault(text_key(clean_post(r["post"] or "")), (r.get("implicit_class") or "").strip())
    out = []
    for r in _read_tsv(folder / IMPLICIT_HATE_STG1):
        kind = (r.get("class") or "").strip()
        text = clean_post(r.get("post") or "")
        if kind not in ("implicit_hate", "explicit_hate", "not_hate") or len(text_key(text)) < 3:
            continue
        ic = stg2.get(text_key(text), "") if kind == "implicit_hate" else ""
        out.append(Example(text, int(kind != "not_hate"), "implicit-hate", kind, "", ic))
    return out


def load_toxigen(folder: str | Path) -> list[Example]:
    """One sentence per line; label and group from the file name
    (``<category>__<hate|neutral>_<group>[_sentences].txt``)."""
    out = []
    for f in sorted(Path(folder).glob("*__*.txt")):
        category, rest = f.stem.split("__", 1)
        kind = "hate" if rest.startswith("hate_") else "neutral" if rest.startswith("neutral_") else None
        if kind is None:
            continue
        group = rest[len(kind) + 1 :].removesuffix("_sentences")
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            s = line.strip().strip("-").strip()
            if len(text_key(s)) >= 3:
                out.append(Example(s, int(kind == "hate"), "toxigen", kind, f"{category}:{group}"))
    return out


def dedupe(examples: list[Example]) -> tuple[list[Example], dict]:
    """One example per ``text_key`` (the first); keys with conflicting labels dropped."""
    by_key: dict[str, list[Example]] = defaultdict(list)
    for e in examples:
        by_key[text_key(e.text)].append(e)
    kept, conflicts, dups = [], 0, 0
    for _, es in by_key.items():
        if len({e.label for e in es}) > 1:
            conflicts += 1
            continue
        dups += len(es) - 1
        best = next((e for e in es if e.implicit_class), es[0])
        kept.append(best)
    return kept, {"input": len(examples), "kept": len(kept), "duplicates_removed": dups, "conflicting_keys_dropped": conflicts}


def near_duplicate_groups(vecs: np.ndarray, threshold: float = NEAR_DUPLICATE_COSINE, block: int = 2048) -> np.ndarray:
    """Group id per row: connected components of the graph "cosine ≥ threshold" (rows normalised)."""
    v = np.asarray(vecs, dtype=np.float32)
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    n = len(v)
    parent = np.arange(n)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for s in range(0, n, block):
        sims = v[s : s + block] @ v.T
        rows, cols = np.nonzero(sims >= threshold)
        for i, j in zip(rows + s, cols):
            if j > i:
                ri, rj = find(int(i)), find(int(j))
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    return np.array([find(i) for i in range(n)])


def _unit_hash(s: str, seed: int) -> float:
    h = hashlib.sha256(f"{seed}:{s}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def assign_splits(examples: list[Example], groups: np.ndarray, seed: int = SPLIT_SEED, fractions=SPLIT_FRACTIONS) -> list[str]:
    """Split name per example. Whole near-duplicate groups move together; within each
    (source, label of the group's first member) stratum groups are ordered by a seeded hash and cut
    at the cumulative fractions, so every split holds about its share of every stratum."""
    members: dict[int, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[int(g)].append(i)
    strata: dict[tuple, list[tuple[float, int]]] = defaultdict(list)
    for g, idx in members.items():
        first = examples[idx[0]]
        name = min(text_key(examples[i].text) for i in idx)
        strata[(first.source, first.label)].append((_unit_hash(name, seed), g))
    out = [""] * len(examples)
    for _, items in sorted(strata.items()):
        items.sort()
        sizes = np.array([len(members[g]) for _, g in items], dtype=float)
        cum = np.cumsum(sizes) / sizes.sum()
        edges = np.cumsum([f for _, f in fractions])
        for (_, g), c in zip(items, cum - sizes / sizes.sum() / 2):
            k = int(np.searchsorted(edges, c, side="right"))
            name = fractions[min(k, len(fractions) - 1)][0]
            for i in members[g]:
                out[i] = name
    return out


def head_splits(examples: list[Example], embed) -> list[str]:
    """Split name per example exactly as the head's recipe makes it: near-duplicate groups of the
    examples' embeddings (``embed``: texts -> unit vectors), then ``assign_splits``."""
    return assign_splits(examples, near_duplicate_groups(embed([e.text for e in examples])))


def load_all(shared_validation: str | Path) -> tuple[list[Example], dict]:
    """Both sets, cleaned and de-duplicated across sets; counts for the report."""
    root = Path(shared_validation)
    ih = load_implicit_hate(root / "implicit-hate")
    tg = load_toxigen(root / "toxigen-demonstrations")
    examples, stats = dedupe(ih + tg)
    stats["implicit-hate_rows"], stats["toxigen_rows"] = len(ih), len(tg)
    return examples, stats


NEUTRAL_DOC_MODULES = ("numpy", "scipy.stats", "scipy.optimize", "sklearn.linear_model", "sklearn.ensemble",
                       "sklearn.preprocessing", "sklearn.metrics", "polars")  # fmt: skip


def neutral_expository_sentences(n: int = 3000, seed: int = SPLIT_SEED, modules: tuple[str, ...] = NEUTRAL_DOC_MODULES) -> list[str]:
    """``n`` seeded sentences of neutral technical prose (the descriptions in the public docstrings
    of installed numeric libraries): clean negatives for the toxicity head, so that expository text
    outside the tweets of the public sets is not read as hate. Not the default corpus, not the NLI
    QA check's modules; deterministic for pinned package versions."""
    import importlib
    import inspect
    import random

    from hcat_pipeline.corpus.chunking import split_sentences

    found: set[str] = set()
    for name in modules:
        mod = importlib.import_module(name)
        for attr in sorted(a for a in dir(mod) if not a.startswith("_")):
            obj = getattr(mod, attr, None)
            doc = inspect.getdoc(obj) if inspect.isfunction(obj) or inspect.isclass(obj) or callable(obj) else None
            if not doc:
                continue
            prose = []
            for para in doc.split("\n\n"):  # the description, up to the first numpydoc section / example
                if "---" in para or ">>>" in para or para.lstrip().startswith((".. ", "Parameters", "Examples")):
                    break
                prose.append(para.replace("\n", " "))
            for sent in split_sentences(" ".join(prose)):
                words = sent.split()
                if 6 <= len(words) <= 40 and sum(c.isalpha() or c == " " for c in sent) >= 0.85 * len(sent):
                    found.add(sent.strip())
    pool = sorted(found)
    return random.Random(seed).sample(pool, min(n, len(pool)))

