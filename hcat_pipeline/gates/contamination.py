"""Per-case contamination risk and the memorisation probe (golden-eval §3.5.4, §7.5), pure core.

Reference corpora are files the user drops in ``data/contamination/`` (prior public releases of the
set, a training corpus, a benchmark dump): ``.txt`` / ``.md`` (one document per blank-line separated
paragraph), ``.jsonl`` (one document per line: the string values of ``text``, ``query``, ``question``,
``answer``, ``reference_answer``, ``content``), ``.parquet`` / ``.csv`` (those columns). A line or
file that cannot be read becomes an error record (``read_reference_corpora`` returns both); the rest
is used.

``contamination_risk(cases, references, embed=None)`` scores each case's query and reference answer:

* exact — SHA-256 of the normalised text (lower case, whitespace and punctuation folded) found among
  the references';
* near-duplicate — word 5-gram shingles; the exact Jaccard of the shingle sets and the containment of
  the case's shingles in a document (a case copied inside a longer document), over every document up
  to ``FULL_SCAN_MAX`` documents, above that over the candidates of a MinHash LSH index (``datasketch``,
  128 permutations; containment in much longer documents may then be missed);
* embedding — max cosine to the reference documents (``embed(texts) -> normalised rows``; optional).

``risk`` = high (exact, Jaccard/containment ≥ 0.8 or cosine ≥ 0.95), medium (≥ 0.5 / ≥ 0.90) or low,
with the evidence (which source, which document, the numbers). High-risk cases are kept apart from
the headline numbers by the caller (``split_headline``).

``memorisation_probe(texts, llm)`` prompts an LLM-like object with the first half of each text and
measures how much of the second half comes back (token recall and longest common token run).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from datasketch import MinHash, MinHashLSH

from hcat_pipeline.schemas import CASE_CONTAMINATION as CONTAMINATION

TEXT_FIELDS = ("text", "query", "question", "answer", "reference_answer", "content")
SHINGLE = 5
NUM_PERM = 128
FULL_SCAN_MAX = 5000  # up to this many reference documents every one is compared; above, MinHash LSH picks candidates
HIGH = {"jaccard": 0.8, "containment": 0.8, "cosine": 0.95}
MEDIUM = {"jaccard": 0.5, "containment": 0.5, "cosine": 0.90}
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class RefDoc:
    source: str  # file name
    doc_id: str  # "<file>:<line or paragraph>"
    text: str


def normalise(text: str) -> str:
    return " ".join(_WORD.findall((text or "").lower()))


def text_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode()).hexdigest()


def shingles(text: str, k: int = SHINGLE) -> set[str]:
    words = _WORD.findall((text or "").lower())
    if len(words) < k:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i:i + k]) for i in range(len(words) - k + 1)}


def _minhash(sh: set[str]) -> MinHash:
    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([s.encode() for s in sh])
    return m


def read_reference_corpora(directory: str | Path) -> tuple[list[RefDoc], list[dict]]:
    """Documents of every readable file under ``directory`` and a list of {file, line, error} records."""
    docs, errors = [], []
    root = Path(directory)
    if not root.is_dir():
        return docs, errors
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
        rel, suffix = str(path.relative_to(root)), path.suffix.lower()
        try:
            if suffix in (".txt", ".md"):
                paras = [p.strip() for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")) if p.strip()]
                docs += [RefDoc(rel, f"{rel}:{i + 1}", p) for i, p in enumerate(paras)]
            elif suffix == ".jsonl":
                for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError as e:
                        errors.append({"file": rel, "line": i, "error": f"not JSON: {e.msg}"})
                        continue
                    text = " ".join(str(rec[f]) for f in TEXT_FIELDS if isinstance(rec, dict) and isinstance(rec.get(f), str))
                    if text:
                        docs.append(RefDoc(rel, f"{rel}:{i}", text))
                    else:
                        errors.append({"file": rel, "line": i, "error": f"no text field ({', '.join(TEXT_FIELDS)})"})
            elif suffix in (".parquet", ".csv"):
                frame = pl.read_parquet(path) if suffix == ".parquet" else pl.DataFrame(list(csv.DictReader(path.open(encoding="utf-8"))))
                cols = [c for c in TEXT_FIELDS if c in frame.columns]
                if not cols:
                    errors.append({"file": rel, "line": None, "error": f"no text column ({', '.join(TEXT_FIELDS)})"})
                    continue
                for i, row in enumerate(frame.select(cols).iter_rows(), 1):
                    text = " ".join(str(v) for v in row if v)
                    if text:
                        docs.append(RefDoc(rel, f"{rel}:{i}", text))
            else:
                errors.append({"file": rel, "line": None, "error": f"unsupported file type {suffix or '(none)'}"})
        except (OSError, UnicodeDecodeError, pl.exceptions.PolarsError) as e:
            errors.append({"file": rel, "line": None, "error": f"unreadable: {e}"})
    return docs, errors


def _risk(exact: bool, jac: float, cont: float, cos: float | None) -> str:
    cos = cos if cos is not None else -1.0
    if exact or jac >= HIGH["jaccard"] or cont >= HIGH["containment"] or cos >= HIGH["cosine"]:
        return "high"
    if jac >= MEDIUM["jaccard"] or cont >= MEDIUM["containment"] or cos >= MEDIUM["cosine"]:
        return "medium"
    return "low"


def contamination_risk(cases: pl.DataFrame, references: Sequence[RefDoc], embed: Callable[[list[str]], np.ndarray] | None = None,
                       fields: Iterable[str] = ("query", "reference_answer")) -> pl.DataFrame:  # fmt: skip
    """One row per case × field (``CONTAMINATION``); no references ⇒ every case "low" with that evidence."""
    fields = [f for f in fields if f in cases.columns]
    ref_hash = {text_hash(d.text): d for d in references}
    ref_sh = [shingles(d.text) for d in references]
    lsh = MinHashLSH(threshold=MEDIUM["jaccard"] * 0.6, num_perm=NUM_PERM)
    if len(references) > FULL_SCAN_MAX:
        for i, sh in enumerate(ref_sh):
            if sh:
                lsh.insert(i, _minhash(sh))
    items = [(r["case_id"], f, r[f]) for r in cases.select("case_id", *fields).to_dicts() for f in fields if r[f]]
    cos = np.full(len(items), np.nan)
    best_cos = np.full(len(items), -1, int)
    if embed is not None and references and items:
        sims = np.asarray(embed([t for _, _, t in items])) @ np.asarray(embed([d.text for d in references])).T
        cos, best_cos = sims.max(axis=1), sims.argmax(axis=1)
    rows = []
    for k, (case_id, field, text) in enumerate(items):
        sh = shingles(text)
        exact_doc = ref_hash.get(text_hash(text))
        jac = cont = 0.0
        best = None
        if sh and references:
            # small corpora: every document (containment inside long documents is found too); large ones: LSH candidates
            cands = range(len(references)) if len(references) <= FULL_SCAN_MAX else (int(key) for key in lsh.query(_minhash(sh)))
            for idx in cands:
                other = ref_sh[idx]
                inter = len(sh & other)
                if not inter:
                    continue
                j, c = inter / len(sh | other), inter / len(sh)
                if (max(j, c), j) > (max(jac, cont), jac):
                    jac, cont, best = j, c, idx
        c_val = None if np.isnan(cos[k]) else float(cos[k])
        doc = exact_doc or (references[best] if best is not None else (references[best_cos[k]] if best_cos[k] >= 0 else None))
        risk = _risk(exact_doc is not None, jac, cont, c_val)
        ev = (f"exact match of {doc.doc_id}" if exact_doc else
              f"Jaccard {jac:.2f}, containment {cont:.2f}" + (f", cosine {c_val:.3f}" if c_val is not None else "") +
              (f" vs {doc.doc_id}" if doc else "")) if references else "no reference corpora declared"  # fmt: skip
        rows.append({"case_id": case_id, "field": field, "exact": exact_doc is not None, "jaccard": jac, "containment": cont,
                     "cosine": c_val, "risk": risk, "source": doc.source if doc else None, "doc_id": doc.doc_id if doc else None,
                     "evidence": ev})  # fmt: skip
    return pl.DataFrame(rows, schema=CONTAMINATION)


def case_risk(per_field: pl.DataFrame) -> pl.DataFrame:
    """One row per case: the worst risk over its fields and the evidence of that field."""
    order = {"high": 0, "medium": 1, "low": 2}
    return (per_field.with_columns(pl.col("risk").replace_strict(order, return_dtype=pl.Int8).alias("_o"))
            .sort("case_id", "_o").group_by("case_id", maintain_order=True).first().drop("_o"))  # fmt: skip


def split_headline(frame: pl.DataFrame, risk: pl.DataFrame, exclude: Sequence[str] = ("high",)) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows of cases kept in the headline numbers, rows of excluded cases) by ``case_risk`` risk."""
    flagged = risk.filter(pl.col("risk").is_in(list(exclude)))["case_id"]
    return frame.filter(~pl.col("case_id").is_in(flagged)), frame.filter(pl.col("case_id").is_in(flagged))


EXCLUDED_RISKS = ("high",)  # the risks left out of the gates, the headline and the rankings by default


def flagged_cases(risk: pl.DataFrame | None, exclude: Sequence[str] = EXCLUDED_RISKS) -> list[str]:
    """Case ids whose contamination risk is in ``exclude`` (none when the risk table is absent or empty)."""
    if risk is None or risk.height == 0 or "risk" not in risk.columns:
        return []
    return sorted(risk.filter(pl.col("risk").is_in(list(exclude)))["case_id"].unique().to_list())


def without_cases(tables: dict[str, pl.DataFrame | None], case_ids: Sequence[str]) -> dict[str, pl.DataFrame | None]:
    """Every table with a ``case_id`` column without the rows of ``case_ids`` (golden-eval §3.5.4: contaminated cases
    stay out of the gates and the headline); tables without one, and absent ones, unchanged."""
    if not case_ids:
        return tables
    drop = list(case_ids)
    return {k: (t.filter(~pl.col("case_id").is_in(drop)) if t is not None and "case_id" in t.columns else t) for k, t in tables.items()}


def contamination_note(case_ids: Sequence[str], exclude: Sequence[str] = EXCLUDED_RISKS) -> str:
    """The sentence the first screen and the headline carry: how many cases were left out, and which."""
    if not case_ids:
        return ""
    first = ", ".join(list(case_ids)[:3]) + (" …" if len(case_ids) > 3 else "")
    return (f"{len(case_ids)} case(s) at contamination risk {'/'.join(exclude)} left out of the gates and the headline, shown "
            f"apart in case_contamination ({first})")


def _lcs_run(a: list[str], b: list[str]) -> int:
    best, prev = 0, [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def memorisation_probe(items: Sequence[tuple[str, str]], llm, *, max_tokens: int = 64, min_words: int = 12,
                       flag_at: float = 0.5, seed: int = 0) -> pl.DataFrame:  # fmt: skip
    """For (case_id, text): prompt ``llm.generate`` with the first half, score the return of the second half.

    ``recall`` = share of the second half's distinct words in the continuation; ``run`` = the longest
    common run of words / the second half's length. ``memorised`` when run ≥ ``flag_at``. Texts shorter
    than ``min_words`` are skipped (recorded). A failing call is a row with ``error`` (the rest goes on).
    """
    rows = []
    for case_id, text in items:
        words = (text or "").split()
        if len(words) < min_words:
            rows.append({"case_id": case_id, "recall": None, "run": None, "memorised": None, "continuation": None,
                         "error": f"skipped: {len(words)} words < {min_words}"})  # fmt: skip
            continue
        half = len(words) // 2
        prompt = "Continue this text exactly, word for word:\n\n" + " ".join(words[:half])
        try:
            out = llm.generate(prompt, temperature=0.0, seed=seed, max_tokens=max_tokens)
        except Exception as e:  # noqa: BLE001 — an LLM call failure is a value (the probe goes on)
            rows.append({"case_id": case_id, "recall": None, "run": None, "memorised": None, "continuation": None,
                         "error": f"{type(e).__name__}: {e}"})  # fmt: skip
            continue
        cont = getattr(out, "text", out) or ""
        second, got = _WORD.findall(" ".join(words[half:]).lower()), _WORD.findall(cont.lower())
        recall = len(set(second) & set(got)) / max(len(set(second)), 1)
        run = _lcs_run(second, got) / max(len(second), 1)
        rows.append({"case_id": case_id, "recall": recall, "run": run, "memorised": run >= flag_at, "continuation": cont[:300], "error": None})
    return pl.DataFrame(rows, schema={"case_id": pl.String, "recall": pl.Float64, "run": pl.Float64, "memorised": pl.Boolean,
                                      "continuation": pl.String, "error": pl.String})  # fmt: skip
