"""Toxicity beyond profanity (metrics/toxicity*.py): obfuscation, rule signals, the packaged
head on the hand-written functional table, explanation columns, the data split, and training."""

import numpy as np
import pytest

from hcat_pipeline.metrics.safety import judge_top_sentences
from hcat_pipeline.metrics.toxicity.attributes import CLASSIFIER_WEIGHT
from hcat_pipeline.metrics.toxicity.data import Example, assign_splits, dedupe, near_duplicate_groups
from hcat_pipeline.metrics.toxicity.model import (
    TOXICITY_COLUMNS,
    load_profanity_classifier,
    load_toxicity_head,
    sentence_toxicity,
    toxicity_explanations,
    toxicity_scores,
)
from hcat_pipeline.metrics.toxicity.rules import deobfuscate, rule_signals
from hcat_pipeline.metrics.toxicity.tfidf import TFIDF_MODEL_KEY, tfidf_vocabulary
from hcat_pipeline.resources.embedding import LAYERS
from hcat_pipeline_tests.toxicity_functional import FUNCTIONAL, HATE, NOT_HATE


@pytest.fixture(scope="module")
def use_encoder():
    from hcat_pipeline.resources.multilingual import MultilingualEncoder

    return MultilingualEncoder()


# ------------------------------------------------------------------ rules


@pytest.mark.parametrize(
    "written, read",
    [
        ("You filthy n1gg3rs.", "niggers"),
        ("Every f a g g o t here", "faggot"),
        ("those k*kes again", "kikes"),
        ("that tr@nny", "tranny"),
        ("what a sc*m", "scum"),
        ("such a fagot", "faggot"),
        ("hateeeee them", "hate"),
    ],
)
def test_deobfuscate_spells_out_lexicon_words(written, read):
    norm, changes = deobfuscate(written)
    assert read in norm.split() or read in norm.replace(".", " ").split(), norm
    assert changes and changes[0][1].startswith(read[:4])


def test_deobfuscate_leaves_ordinary_tokens_alone():
    text = "Pay $5 by the 2nd of May via e-mail; COVID-19 rules, 3.5% rate, I'm fine, wheelchairs."
    assert deobfuscate(text) == (text, [])


def test_rule_signals_threat_dehumanising_counter_and_reclaimed():
    threat = rule_signals("They should all be hanged in the town square.")["evidence"]
    assert "threat" in threat
    assert "threat" not in rule_signals("The rope is hanged on the hook.")["evidence"]  # no intent frame
    assert "dehumanising" in rule_signals("Those refugees are vermin.")["evidence"]
    assert "dehumanising" not in rule_signals("Rats are vermin that live in sewers.")["evidence"]  # no human target
    counter = rule_signals("The claim that immigrants are criminals is a racist myth.")["evidence"]
    assert "denounce" in counter and "reported" in counter
    assert "slur_reclaimed" in rule_signals("We're queer and proud of it.")["evidence"]
    assert "slur" in rule_signals("Get lost, you queers.")["evidence"]


# ------------------------------------------------------------------ the packaged head


def test_head_loads_without_pickle_and_records_its_training():
    head = load_toxicity_head()
    meta = head["meta"]
    assert meta["format"] == "hcat-toxicity-head/4"  # shipped with the fine-tuned encoder (toxicity_encoder)
    assert {"minilm", "lexical"} <= set(meta["variants"]) <= {"full", "minilm", "lexical"}
    counts = meta["counts"]
    assert sum(counts["test"].values()) > 4000 and sum(counts["train"].values()) > 12000
    assert head["minilm_emb_coef"].shape == (384 * LAYERS,)  # MiniLM layer features
    assert "full" not in meta["variants"] or head["full_emb_coef"].shape == (384 * LAYERS + 512,)
    assert "layer features" in meta["embedding_features"]
    # plain arrays only (the meta dict and the vectorizers rebuilt from the arrays on first use are in-memory additions)
    assert all(head[k].dtype != object for k in head if k not in ("meta", TFIDF_MODEL_KEY))
    assert len(tfidf_vocabulary(head, "word")) + len(tfidf_vocabulary(head, "char")) == head["tfidf_coef"].size


def _scores(sentences, **kw):
    return np.array([r["toxicity"] for r in sentence_toxicity(sentences, **kw)])


def _pair_share(hi, lo):
    return float((np.asarray(hi)[:, None] > np.asarray(lo)[None, :]).mean())


@pytest.mark.parametrize("variant", [v for v in ("full", "minilm") if v in load_toxicity_head()["meta"]["variants"]])
def test_functional_table_hate_above_profanity_counter_speech_and_neutral(variant, embedding_model, use_encoder):
    kw = {"embed": embedding_model.layer_features} | ({"embed_aux": use_encoder.encode} if variant == "full" else {})
    scores = {c: _scores(s, **kw) for c, s in FUNCTIONAL.items()}
    hate = np.concatenate([scores[c] for c in HATE])
    shares = {c: _pair_share(hate, scores[c]) for c in NOT_HATE}
    # the target: hate above harmless profanity / counter-speech / neutral in >= 90 % of pairs
    assert all(v >= 0.9 for v in shares.values()), shares
    old = {c: np.array([r["profanity"] for r in sentence_toxicity(FUNCTIONAL[c], **kw)]) for c in ("implicit", "explicit", "profanity")}
    # the profanity model alone ranks swearing above hate: the failure the new score fixes
    assert _pair_share(np.concatenate([old["implicit"], old["explicit"]]), old["profanity"]) < 0.5


def test_explanations_columns_top_sentence_and_category(embedding_model):
    rows = [
        ["Thanks for asking.", "Those refugees are parasites who breed like rats.", "Have a nice day."],
        ["The savings rate is 2% per year.", "Interest is paid monthly."],
        ["Fuck, the app crashed again."],
        [],
        None,
    ]
    out = toxicity_explanations(rows, embed=embedding_model.layer_features)
    assert all(set(r) == set(TOXICITY_COLUMNS) for r in out)
    hate, clean, swear, empty, missing = out
    assert hate["toxicity_top_sentence"] == rows[0][1]
    assert hate["toxicity"] == pytest.approx(max(hate["toxicity_per_sentence"])) and len(hate["toxicity_per_sentence"]) == 3
    assert hate["toxicity"] > 0.5 > clean["toxicity"] and hate["toxicity_category"] == "dehumanising comparison"
    assert "dehumanising" in hate["toxicity_evidence"] and hate["toxicity_head"] == "minilm"
    assert clean["toxicity_category"] == "none"
    assert swear["toxicity_profanity"] > 0.8 and swear["toxicity"] < swear["toxicity_profanity"]
    assert empty["toxicity"] is None and missing["toxicity"] is None and empty["toxicity_per_sentence"] == []


def test_scores_batch_once_are_deterministic_and_lexical_without_embeddings(embedding_model):
    calls = []
    real = load_profanity_classifier()

    def counting(texts):
        calls.append(list(texts))
        return real(texts)

    rows = [["You are a stupid fucking idiot.", "Have a nice day."], ["Immigrants are vermin."]]
    a = toxicity_scores(rows, predict_prob=counting, embed=embedding_model.layer_features)
    assert len(calls) == 1 and len(calls[0]) == 6  # as-written + de-obfuscated, every sentence, one call
    assert a == toxicity_scores(rows, embed=embedding_model.layer_features)
    # PROFANITY: a swear word sets 0.9, else the classifier × CLASSIFIER_WEIGHT
    assert a[0]["toxicity_profanity"] == pytest.approx(max(0.9, CLASSIFIER_WEIGHT * float(max(real(rows[0])))))
    lex = toxicity_explanations(rows)
    assert lex[0]["toxicity_head"] == "lexical" and 0.0 <= lex[1]["toxicity"] <= 1.0
    with pytest.raises(ValueError, match="embed_aux"):
        toxicity_scores(rows, embed_aux=embedding_model.layer_features)
    with pytest.raises(ValueError, match="layer_features"):  # sentence vectors instead of the layer features the head reads
        toxicity_scores(rows, embed=embedding_model.embed)


def test_judge_second_stage_only_above_threshold():
    class Judge:
        def __init__(self):
            self.prompts = []

        def generate(self, prompt, json_schema=None, **kw):
            from hcat_pipeline.resources.llm import LLMResult

            self.prompts.append(prompt)
            data = {c: c == "HARM_HATE" for c in json_schema["required"]}
            return LLMResult("{}", data, "fake", "fake", 0.0, 1, 1, 0.0, 1)

    expl = [{"toxicity": 0.9, "toxicity_top_sentence": "Those people are vermin."}, {"toxicity": 0.1, "toxicity_top_sentence": "Hello."}, {"toxicity": None}]
    llm = Judge()
    out = judge_top_sentences(expl, llm, threshold=0.5)
    assert len(llm.prompts) == 1 and "vermin" in llm.prompts[0]
    assert out[0]["HARM_HATE"] == 1 and out[1]["harm_any"] is None and out[2]["harm_any"] is None


# ------------------------------------------------------------------ data split and training


def _toy_examples():
    ex = []
    for i in range(60):
        ex.append(Example(f"group member {i} is lazy and worthless", 1, "toy", "hate"))
        ex.append(Example(f"group member {i} opened a savings account", 0, "toy", "neutral"))
    return ex


def test_dedupe_and_near_duplicates_stay_in_one_split():
    ex = _toy_examples() + [Example("Group member 3 is lazy and worthless!", 1, "toy", "hate"), Example("group member 4 opened a savings account", 1, "toy", "hate")]
    kept, stats = dedupe(ex)
    assert stats["duplicates_removed"] == 1 and stats["conflicting_keys_dropped"] == 1 and len(kept) == 119
    rng = np.random.default_rng(0)
    base = rng.normal(size=(len(kept), 16))
    base[1] = base[0] + 1e-3  # a near-duplicate pair
    groups = near_duplicate_groups(base)
    assert groups[0] == groups[1] and len(set(groups.tolist())) == len(kept) - 1
    s1, s2 = assign_splits(kept, groups), assign_splits(kept, groups)
    assert s1 == s2 and s1[0] == s1[1]
    for label in (0, 1):
        share = np.mean([s == "test" for s, e in zip(s1, kept) if e.label == label])
        assert 0.15 < share < 0.35


def test_training_never_sees_the_test_split():
    from hcat_pipeline.metrics.toxicity.train import train_toxicity_head

    ex = _toy_examples()
    rng = np.random.default_rng(1)
    direction = rng.normal(size=24)
    seen: list[str] = []

    def embed(texts):
        seen.extend(texts)
        v = rng.normal(size=(len(texts), 24)) * 0.3
        v += np.array([1.0 if ("lazy" in t or "worthless" in t) else 0.0 for t in texts])[:, None] * direction
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    splits = assign_splits(ex, np.arange(len(ex)))
    head, report = train_toxicity_head(ex, splits, np.arange(len(ex)), embed, seed=0, log=lambda _: None)
    test_texts = {e.text for e, s in zip(ex, splits) if s == "test"}
    assert test_texts and not test_texts & set(seen)
    assert report["augmented"]["aug_counter"] > 0 and head["minilm_emb_coef"].shape == (24,)
    assert report["variants"]["minilm"]["val_auroc"] > 0.9


def test_person_directed_threats_and_insults_have_a_floor_but_reports_and_harmless_swearing_do_not(embedding_model):
    from hcat_pipeline.metrics.toxicity.attributes import FLOORS

    rows = sentence_toxicity(
        ["I will find you and hurt you.", "You are a stupid idiot and I hate you.", "Saying 'I will hurt you' is never acceptable.",
         "We need to kill the process and restart it.", "Fuck, the app crashed again."],
        embed=embedding_model.layer_features,
    )
    threat, insult, reported, technical, swearing = rows
    # the floor holds whatever the head says, and the reason names the rule
    assert threat["category"] == "threat" and threat["attributes"]["THREAT"] >= FLOORS["threat_aimed"] <= threat["toxicity"]
    assert threat["reasons"]["THREAT"].startswith("violence aimed at a person or group")
    assert insult["category"] == "insult" and insult["attributes"]["INSULT"] >= 0.8 and insult["toxicity"] >= 0.8
    for r in (reported, technical, swearing):  # no person targeted, or reported speech
        assert r["attributes"]["THREAT"] < 0.5 and r["attributes"]["INSULT"] < 0.5 and r["toxicity"] < 0.5, r
    assert swearing["attributes"]["PROFANITY"] >= 0.9 > 0.5 > swearing["attributes"]["IDENTITY_ATTACK"]


def test_technical_prose_and_code_masks_are_not_read_as_hate(embedding_model):
    # "*n*" (emphasis in docs) and "a*b" (maths) are not masked slurs; expository prose is not hate
    sentences = ["The type of the *n* in the tuple is an integer.", "The product a*b is computed element-wise.",
                 "This is Python's approach to operator overloading, allowing classes to define their own behavior.",
                 "In Python, the int type represents numbers in an unlimited range, subject to available memory only."]
    rows = sentence_toxicity(sentences, embed=embedding_model.layer_features)
    assert all(not r["evidence"].get("obfuscated") for r in rows)
    assert max(r["toxicity"] for r in rows) < 0.5, [(r["toxicity"], r["sentence"]) for r in rows]


@pytest.mark.parametrize(
    "sentence, aimed",
    [("I will find you and hurt you.", True), ("They should all be shot.", True), ("Those people must die.", True),
     ("We will burn down your house tonight.", True), ("You should kill yourself.", True), ("I will kill every last one of them.", True),
     ("Jews should burn.", True), ("He should be shot.", True), ("All these k1kes should be sent to the ovens.", True),
     ("They should execute the nightly job after the backup.", False), ("You will kill the worker if it hangs again.", False),
     ("We must destroy the old branch before the release.", False), ("Should you kill the worker if it hangs?", False),
     ("If it hangs, you should restart it.", False), ("I'll show you how to kill the stuck process.", False),
     ("If they stop responding, the worker will die.", False), ("They will burn the old logs tonight.", False),
     ("You should get the worker killed before midnight.", False)],
)  # fmt: skip
def test_a_threat_is_directed_only_when_the_person_is_what_the_violence_is_done_to(sentence, aimed):
    from hcat_pipeline.metrics.toxicity.attributes import threat_aimed

    sig = rule_signals(sentence)
    assert "threat" in sig["evidence"]  # a violence word in an intent frame, in every case
    assert threat_aimed(sig["normalised"], sig["evidence"]) is aimed


def test_the_insult_floor_needs_an_insulting_word_addressed_to_someone_not_only_the_profanity_model():
    from hcat_pipeline.metrics.toxicity.attributes import lexicon_findings

    def rule(s):
        sig = rule_signals(s)
        found = [f for f in lexicon_findings(sig["normalised"], sig["evidence"], profanity=0.95) if f.attribute == "INSULT"]
        return "insult" if found else None  # the profanity model is sure either way

    assert rule("You are a stupid idiot and I hate you.") == "insult"
    assert rule("You fucking moron, nobody asked you.") == "insult"
    for insult in ("You are an idiot.", "You absolute moron.", "You're a dumbass.", "Shut up, you idiot.", "what a dumbass"):
        assert rule(insult) == "insult", insult
    for not_insult in ("If you get hit by the goblin, you die and lose the level.", "Your stupid printer jammed again, sorry.",
                       "You lucky bastard, you won the office lottery twice.", "You are not an idiot, you made one mistake."):
        assert rule(not_insult) is None, not_insult


def test_operational_negatives_are_deterministic_split_by_template_and_exclude_the_tests_sentences():
    from hcat_pipeline.metrics.toxicity.operational import heldout_templates, operational_negatives, operational_templates

    train, held = operational_templates(split="train"), operational_templates(split="heldout")
    assert train == operational_templates(split="train") and train and held and not set(train) & set(held)
    assert heldout_templates() and heldout_templates() == heldout_templates(0)
    negatives = set(operational_negatives())
    assert set(train) <= negatives and not negatives & set(held)
    # no sentence written anywhere in the test suite is a training negative
    import ast
    from pathlib import Path

    literals = {n.value.strip() for f in Path(__file__).parent.glob("*.py") for n in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
                if isinstance(n, ast.Constant) and isinstance(n.value, str)}  # fmt: skip
    assert len(literals) > 1000 and not negatives & literals


def test_reclaimed_negatives_are_split_by_template_and_not_the_functional_tables_sentences():
    from hcat_pipeline.metrics.toxicity.reclaimed import RECLAIMED_TEMPLATES, reclaimed_heldout, reclaimed_templates
    from hcat_pipeline.metrics.toxicity.rules import in_words, lexicon

    train, held = reclaimed_templates(with_ids=True), reclaimed_templates(split="heldout", with_ids=True)
    assert train == reclaimed_templates(with_ids=True) and train and held
    assert {t for t, _ in held} == reclaimed_heldout() and not {t for t, _ in train} & reclaimed_heldout()
    assert len({t for t, _ in train} | {t for t, _ in held}) == len(RECLAIMED_TEMPLATES)
    sentences = {s for _, s in train + held}
    assert not sentences & {s for v in FUNCTIONAL.values() for s in v}
    # every sentence carries a reclaimable slur of the lexicon (what the frames are for)
    words = lexicon()["reclaimable"]
    assert all(any(in_words(w.strip(".,;?"), words) for w in s.lower().split()) for s in sentences)
