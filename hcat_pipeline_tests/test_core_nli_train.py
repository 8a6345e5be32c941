"""The public-set readers, their held-out split and the one NLI training recipe (pure; fake featurizer)."""

import csv
import json

import numpy as np
import pytest

from hcat_pipeline.corpus.chunking import split_sentences
from hcat_pipeline.metrics.nli import api as nli
from hcat_pipeline.metrics.nli import sets as nli_sets
from hcat_pipeline.metrics.nli.train import TrainConfig, public_pairs, source_weights, train_nli_head

ARTICLES = [
    ("a1", "The council approved the new bridge in 2019. Work started in March and cost 12 million pounds. "
           "The mayor, Ann Smith, opened it in 2021."),
    ("a2", "Sales at Acme rose by 8 percent last year. The company hired 300 workers in Leeds. "
           "Its chief executive may retire in 2025."),
    ("a3", "The museum in York reopened on Monday. It had been closed for two years after a flood. "
           "About 5000 visitors came on the first day."),
    ("a4", "Rain caused delays on the railway near Bath. Trains were cancelled for six hours. "
           "Engineers repaired the line by Tuesday evening."),
]


CORPUS = [
    ["The Eiffel Tower was completed in 1889 in Paris.", "It is 330 metres tall and was designed by Gustave Eiffel.",
     "It was the tallest structure in the world until 1930.", "Millions of people visit the tower every year."],
    ["Python was created by Guido van Rossum.", "The first version was released in 1991, and it emphasises readability.",
     "Python supports several programming paradigms.", "Its standard library is large and may grow further."],
    ["The Amazon River flows through Brazil, Peru and Colombia.", "It has over 1100 tributaries, and it carries much water.",
     "The river basin covers about 7 million square kilometres.", "Most of the basin is covered by rainforest."],
]


@pytest.fixture
def validation_dir(tmp_path):
    """A miniature ../shared/validation in the three formats (FaithDial CSV, SummEdits JSON, FIB JSONL)."""
    root = tmp_path / "validation"
    (root / "faithdial-audit").mkdir(parents=True)
    with (root / "faithdial-audit" / "GPT2__gpt2_processed_wow.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["knowledge", "history", "gpt2", "begin_label", "vrm_label"])
        for _, text in ARTICLES:
            first = split_sentences(text)[0]
            w.writerow([text, "hi", first, "Entailment", "x"])
            w.writerow([text, "hi", f"I think {first.lower()} I love it.", "Hallucination", "x"])
            w.writerow([text, "hi", "Cool!", "Generic", "x"])
    (root / "summedits").mkdir()
    rows = []
    for aid, text in ARTICLES:
        seed = " ".join(split_sentences(text)[:2])
        rows.append({"id": f"{aid}_og", "doc": text, "summary": seed, "original_summary": seed, "label": 1,
                     "edit_types": [], "split": "test"})
        edited = seed.replace("2019", "2021").replace("8 percent", "80 percent").replace("York", "Bath").replace("six", "two")
        rows.append({"id": f"{aid}_1", "doc": text, "summary": edited, "original_summary": seed, "label": 0,
                     "edit_types": ["entity_modification"], "split": "test"})
    (root / "summedits" / "summedits_news.json").write_text(json.dumps(rows))
    (root / "fib").mkdir()
    with (root / "fib" / "xsum__fib__binary_choice-using_t5_distractors.jsonl").open("w") as fh:
        for aid, text in ARTICLES:
            good = split_sentences(text)[1]
            bad = good.replace("March", "June").replace("300", "30").replace("two", "ten").replace("six", "nine")
            fh.write(json.dumps({"id": aid, "input": text, "list_choices": [bad, good], "lbl": 1, "correct_choice": good}) + "\n")
    return root


def test_readers_labels_and_grouped_seeded_split(validation_dir):
    items = nli_sets.load_sets(validation_dir)
    fd = [it for it in items if it.set == "faithdial"]
    assert len(fd) == 8 and sorted(it.label for it in fd) == [0] * 4 + [1] * 4  # "Generic" left out
    assert {it.kind for it in fd} == {"GPT2"}
    se = [it for it in items if it.set == "summedits"]
    assert {it.kind for it in se} == {"seed", "entity_modification"} and all(it.seed_answer for it in se)
    fib = [it for it in items if it.set == "fib"]
    assert len(fib) == 8 and sum(it.label for it in fib) == 4
    for it in items:
        assert nli_sets.split_of(it.set, it.group) == nli_sets.split_of(it.set, it.group)  # deterministic
    # grouped: all items of one document on one side; the sides are complementary
    for s in nli_sets.SETS:
        by_group = {}
        for it in items:
            if it.set == s:
                by_group.setdefault(it.group, set()).add(nli_sets.split_of(it.set, it.group))
        assert all(len(v) == 1 for v in by_group.values())
    train = nli_sets.load_sets(validation_dir, split="train")
    test = nli_sets.load_sets(validation_dir, split="test")
    assert len(train) + len(test) == len(items)
    # another seed moves some groups; heldout=1 holds everything out
    assert len(nli_sets.load_sets(validation_dir, split="train", heldout=1.0)) == 0
    groups = [f"g{i}" for i in range(400)]
    share = np.mean([nli_sets.split_of("x", g) == "test" for g in groups])
    assert 0.3 < share < 0.5
    assert [nli_sets.split_of("x", g, seed=1) for g in groups] != [nli_sets.split_of("x", g) for g in groups]


def test_sentence_labels_use_the_seed_summary(validation_dir):
    it = next(x for x in nli_sets.load_sets(validation_dir, sets=("summedits",)) if x.label == 0 and "2019" in x.seed_answer)
    sents = split_sentences(it.answer)
    labels = nli_sets.sentence_labels(it, sents, split_sentences(it.seed_answer))
    assert labels == [0 if "2021" in s else 1 for s in sents] and 0 in labels and 1 in labels
    fd = next(x for x in nli_sets.load_sets(validation_dir, sets=("faithdial",)) if x.label == 0)
    assert nli_sets.sentence_labels(fd, split_sentences(fd.answer)) == [None, None]  # which sentence is wrong: unknown


class FakeModel:
    """Deterministic features: novelty fractions against the premise (no models)."""

    def __init__(self):
        self.seen = []

    def embed(self, texts):
        rng = np.random.default_rng(0)
        base = rng.normal(size=(1, 16))
        return np.vstack([base + len(t) % 7 for t in texts])

    def pair_features(self, premises, hypotheses, use_parse=True, use_contradiction=True, represent=False):
        self.seen += list(hypotheses)
        rows = []
        for p, h in zip(premises, hypotheses):
            prem = " ".join(p)
            hc, hn = nli.content_tokens(h), nli.numbers(h)
            pc, pn = set(nli.content_tokens(prem)), set(nli.numbers(prem))
            rows.append([sum(t not in pc for t in hc) / max(1, len(hc)), sum(n not in pn for n in hn) / max(1, len(hn)),
                         float(h in p)])
        out = (np.asarray(rows), ["content_novelty", "number_novelty", "aligned_coverage"])
        if not represent:
            return out
        # a "pair representation": the features again plus text lengths; quotations are not represented (zeros)
        quoted = np.array([h in p for p, h in zip(premises, hypotheses)])
        reps = np.column_stack([out[0], [len(h) % 5 for h in hypotheses], [len(" ".join(p)) % 3 for p in premises]])
        reps[quoted] = 0.0
        return (*out, reps, quoted)


def test_training_is_byte_reproducible_and_never_reads_the_held_out_part(validation_dir, tmp_path):
    docs = CORPUS
    cfg = TrainConfig(n_pairs=120, qa_pairs=40, validation_dir=str(validation_dir), cv_folds=2)
    m1, m2 = FakeModel(), FakeModel()
    h1, pairs, raw = train_nli_head(docs, m1, split_sentences, cfg, corpus_name="mini")
    h2, _, _ = train_nli_head(docs, m2, split_sentences, cfg, corpus_name="mini")
    assert h1.save(tmp_path / "a.json").read_bytes() == h2.save(tmp_path / "b.json").read_bytes()
    assert h1.info["C"] in (0.01, 0.03, 0.1, 0.3, 1.0) and len(h1.info["cv_auroc_by_C"]) == 5
    assert h1.info["config"]["n_pairs"] == 120 and set(h1.info["pairs_by_source"]) <= {"corpus", "faithdial", "summedits", "fib"}
    assert h1.w[0] < 0 and h1.w[1] <= 0  # novelty lowers the entailment logit
    # the pair probe: one more feature, its probe stored with the head and read back as it was saved
    assert h1.feature_names[-1] == "pair_probe" and h1.probe is not None and h1.probe.coef.shape == (5,)
    assert raw.shape[1] == 4 and np.all(raw[[p.hypothesis in p.premise for p in pairs], 3] == 8.0)  # quotations: QUOTED
    again = type(h1).load(tmp_path / "a.json")
    assert again.probe.to_dict() == h1.probe.to_dict() and again.to_json() == h1.to_json()
    no_probe, _, raw0 = train_nli_head(docs, FakeModel(), split_sentences, TrainConfig(**{**cfg.__dict__, "use_probe": False}), "mini")
    assert no_probe.probe is None and no_probe.feature_names == h1.feature_names[:-1] and raw0.shape[1] == 3
    test_answers = {it.answer for it in nli_sets.load_sets(validation_dir, split="test")}
    train_answers = {it.answer for it in nli_sets.load_sets(validation_dir, split="train")}
    held_only = {s for a in test_answers - train_answers for s in split_sentences(a)} - {
        s for a in train_answers for s in split_sentences(a)}
    assert held_only and not held_only & set(m1.seen)
    # another seed gives other corpus pairs, hence another head
    h3, _, _ = train_nli_head(docs, FakeModel(), split_sentences, TrainConfig(**{**cfg.__dict__, "seed": 1}), "mini")
    assert h3.to_json() != h1.to_json()


def test_public_pairs_dedupe_and_weights_balance_sources(validation_dir):
    cfg = TrainConfig(validation_dir=str(validation_dir), heldout=0.0)
    pairs, sources, groups = public_pairs(cfg, split_sentences)
    keys = [(s, g, p.hypothesis) for p, s, g in zip(pairs, sources, groups)]
    assert len(keys) == len(set(keys))
    assert {p.label for p in pairs} == {0, 1} and set(sources) == {"faithdial", "summedits", "fib"}
    y = np.array([p.label for p in pairs])
    w = source_weights(sources, y)
    for s in set(sources):
        for lab in (0, 1):
            m = (np.array(sources) == s) & (y == lab)
            if m.any():
                assert w[m].sum() == pytest.approx(len(w) / (2 * len(set(sources))), rel=0.3)
