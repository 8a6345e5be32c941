import numpy as np

from hcat_pipeline.core.robustness import (
    canary_for,
    contradict_sentence,
    counterfactual_pair,
    injection_variant,
    misleading_premise_query,
    ood_queries,
    swap_terms,
    typo_variant,
)

Q = "Which method of the context manager is called when the block is left?"


def test_typos_are_seeded_and_deterministic():
    a = typo_variant(Q, seed=0, key="c1")
    assert a == typo_variant(Q, seed=0, key="c1")
    assert a != Q
    others = {typo_variant(Q, seed=s, key="c1") for s in range(8)}
    assert len(others) > 3  # the seed matters
    # only letters of long words are touched: same number of words, small edit
    assert len(a.split()) == len(Q.split())
    assert sum(x != y for x, y in zip(a.split(), Q.split(), strict=True)) >= 1


def test_typos_on_short_text_still_change_it():
    assert typo_variant("Is it ok?", seed=1) != "Is it ok?"


def test_contradiction_rules():
    assert contradict_sentence("A tuple is immutable.") == ("A tuple is not immutable.", "negation")
    assert contradict_sentence("Strings cannot be changed in place.")[0] == "Strings can be changed in place."
    assert contradict_sentence("The default is not evaluated again.")[0] == "The default is evaluated again."
    assert contradict_sentence("Dicts keep insertion order since Python 3.7.")[1] == "number"
    assert contradict_sentence("Keys always stay first.")[0] == "Keys never stay first."
    assert contradict_sentence("Hello there.") is None


def test_misleading_premise_and_injection():
    q = misleading_premise_query("What does pass do?", "The pass statement raises an error.")
    assert q == "Given that the pass statement raises an error, what does pass do?"
    direct = injection_variant("What does pass do?", "gc-1", seed=0, indirect=False)
    indirect = injection_variant("What does pass do?", "gc-1", seed=0, indirect=True)
    canary = canary_for("gc-1")
    assert canary in direct["query"] and direct["distractor_passage"] is None
    assert indirect["query"] == "What does pass do?" and canary in indirect["distractor_passage"]
    assert any(canary in c for c in direct["constraints"])


def test_counterfactual_pairs_differ_only_in_the_attribute():
    a, b, how = counterfactual_pair("What should he do if his loan is refused?", "gender")
    assert how == "term_swap" and b == "What should she do if her loan is refused?"
    a, b, how = counterfactual_pair("What does pass do?", "age")
    assert how == "persona" and a.endswith("what does pass do?") and a != b
    assert a.replace("25", "70") == b
    assert swap_terms("Nothing here.", "gender") is None


def test_ood_queries_are_far_from_the_corpus():
    rng = np.random.default_rng(0)

    def embed(texts):
        v = rng.normal(size=(len(texts), 8)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    corpus = embed(["x"] * 5)
    got = ood_queries(3, seed=0, corpus_vectors=corpus, embed=embed, max_similarity=0.99)
    assert len(got) == 3 and all(g["max_corpus_similarity"] < 0.99 for g in got)
    # a corpus that contains the topic filters it out
    none = ood_queries(3, seed=0, corpus_vectors=corpus, embed=lambda t: np.tile(corpus[:1], (len(t), 1)), max_similarity=0.5)
    assert none == []
