"""Draft the QA-style groundedness dev set (issue 23): questions, correct and hallucinated answers
made by the packaged LLM over corpora other than the default one; every row is then labelled by
hand (``label``: 1 supported by the passage, 0 not; ``note`` why) before it is used.

    python benchmarks/make_nli_qa_dev.py --out benchmarks/data/nli_qa_dev/draft.jsonl [--per-corpus 20]

Corpora: the hand-written banking pages of ``benchmarks/data/case_validity/corpus`` and pip's
user guide (``/usr/share/doc/python3-pip/html``, when installed). Per passage (four prose sentences in a
row, seeded choice): the LLM writes a question and its answer from the passage (``with_context``), answers
the question without the passage (``closed_book``), and rewrites its answer changing one fact
(``one_fact_changed``, the HaluEval way of making a hard hallucination).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORPORA = {"banking": ROOT / "benchmarks" / "data" / "case_validity" / "corpus", "pip": Path("/usr/share/doc/python3-pip/html")}
WINDOW = 4  # sentences per passage
QA_SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
    "required": ["question", "answer"],
}
MAX_TOKENS = 120  # one sentence each; a longer output is cut and fails as invalid JSON (counted, skipped)
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def passages(folder: Path, n: int, seed: int) -> list[str]:
    from hcat_pipeline.corpus.chunking import split_sentences
    from hcat_pipeline.corpus.ingest import ingest

    docs, _, _ = ingest(include_embedded=False, paths=[str(folder)])
    texts = []
    for doc in docs["text"].to_list():
        prose = [s for s in split_sentences(doc) if 6 <= len(s.split()) <= 45 and not any(c in s for c in "{};=<>#|")]
        texts += [" ".join(prose[i : i + WINDOW]) for i in range(0, len(prose) - WINDOW + 1, WINDOW)]
    return random.Random(seed).sample(texts, min(n, len(texts)))


def draft(llm, passage: str, seed: int) -> dict:
    """The question, and its three answers (with the passage, closed book, one fact changed)."""
    qa = llm.generate(f"Passage:\n{passage}\n\nWrite one question that this passage answers, and its answer in one "
                      "sentence taken from the passage.", json_schema=QA_SCHEMA, seed=seed).data
    q, a = qa["question"].strip(), qa["answer"].strip()
    closed = llm.generate(f"Answer in one short sentence: {q}", json_schema=ANSWER_SCHEMA, seed=seed).data["answer"].strip()
    changed = llm.generate(f"Question: {q}\nAnswer: {a}\n\nRewrite the answer so that it sounds just as confident but "
                           "changes one fact (a number, a name, a condition, or add or remove a 'not'), so that it "
                           "becomes wrong. One sentence.", json_schema=ANSWER_SCHEMA, seed=seed).data["answer"].strip()
    return {"question": q, "answers": {"with_context": a, "closed_book": closed, "one_fact_changed": changed}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-corpus", type=int, default=13)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from hcat_pipeline.resources.llm import LLM, LLMCallFailed

    llm, rows = LLM(max_tokens=MAX_TOKENS), []
    for name, folder in CORPORA.items():
        if not folder.is_dir():
            print(f"{name}: {folder} not found, skipped")
            continue
        for k, passage in enumerate(passages(folder, args.per_corpus, args.seed)):
            try:
                row = draft(llm, passage, args.seed)
            except LLMCallFailed as e:  # counted and shown, the rest goes on
                print(f"{name} {k}: skipped, the LLM failed ({e.kind})")
                continue
            for method, ans in row["answers"].items():
                rows.append({"id": f"{name}-{k:02d}-{method}", "corpus": name, "context": passage, "question": row["question"],
                             "answer": ans, "method": method, "label": None, "note": ""})
            print(f"{name} {k}: {row['question'][:70]}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(rows)} rows -> {args.out} (label them by hand before use)")


if __name__ == "__main__":
    main()
