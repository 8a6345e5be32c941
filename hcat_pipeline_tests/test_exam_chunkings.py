"""Chunk size as a design variable (exam paper App. B.1; exam/chunkings.py): sources mapped between chunkings by
character overlap, and the joint IRT fit's chunking latent on simulated answers whose truth is known."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.corpus.chunking import Chunking
from hcat_pipeline.exam.chunkings import compare_chunkings, joint_matrix, remap_sources, source_map

RETRIEVERS = ("bm25", "dense", "hybrid", "oracle", "dense_use")


def _answers(delta: float, seed: int, takers: int = 10, items: int = 60) -> dict[str, pl.DataFrame]:
    """2PL answers of the same takers over two chunkings; chunking "B" shifts every ability by ``delta``."""
    rng = np.random.default_rng(seed)
    theta, a, b = rng.normal(size=takers), rng.uniform(0.8, 2.0, items), rng.normal(size=items)
    out = {}
    for name, shift in (("A", 0.0), ("B", delta)):
        p = 1 / (1 + np.exp(-a * (theta[:, None] + shift - b)))
        y = (rng.random(p.shape) < p).astype(int)
        out[name] = pl.DataFrame([{"system_id": f"t{i}", "llm": f"m{i % 2}", "retriever": RETRIEVERS[i % 5], "icl_examples": 0,
                                   "question_id": f"q{j:02d}", "correct": int(y[i, j])} for i in range(takers) for j in range(items)])  # fmt: skip
    return out


def test_a_source_chunk_maps_to_the_other_chunkings_chunks_by_shared_characters():
    base = pl.DataFrame({"chunk_id": ["s"], "doc_id": ["d"], "start": [20], "end": [60]})
    other = pl.DataFrame({"chunk_id": ["c1", "c2", "c3", "x"], "doc_id": ["d", "d", "d", "e"], "start": [0, 30, 70, 20], "end": [30, 70, 100, 60]})
    mapping = source_map(base, other)
    assert mapping == {"s": ["c2", "c1"]}  # 30 shared characters, then 10; c3 shares none, x is another document
    exam = pl.DataFrame({"question_id": ["q", "r"], "chunk_id": ["s", "gone"]})
    assert remap_sources(exam, mapping)["source_chunk_ids"].to_list() == [["c2", "c1"], []]


def test_the_chunking_that_helps_is_found_and_no_effect_is_not_invented():
    # the interval is a bootstrap over questions (50 refits here); the fit's conditional errors were too narrow
    table, better = compare_chunkings(_answers(delta=1.0, seed=1), n_boot=50)
    assert better["verdict"] == "B retrieves better" and better["ci_low"] > 0 and better["delta"] > 0
    assert table.height == 20 and set(table["chunking"]) == {"A", "B"} and (table["ci_low"] < table["theta"]).all()
    worse = compare_chunkings(_answers(delta=-1.0, seed=2), n_boot=50)[1]
    assert worse["verdict"] == "A retrieves better" and worse["ci_high"] < 0
    same = compare_chunkings(_answers(delta=0.0, seed=4), n_boot=50)[1]
    assert same["verdict"].startswith("no difference resolved") and same["ci_low"] < 0 < same["ci_high"]
    assert compare_chunkings(_answers(delta=0.0, seed=4), n_boot=50)[1] == same  # seeded: the same verdict and interval


def test_the_joint_matrix_adds_a_centred_chunking_latent():
    y, takers, questions, comps = joint_matrix(_answers(delta=0.5, seed=4))
    assert comps["chunking"] == ["A"] * 10 + ["B"] * 10 and takers[0] == "t0|A" and len(questions) == 60
    from hcat_pipeline.irt.model import fit_irt

    lat = fit_irt(y, "2pl", comps, 0).components["chunking"]
    assert float(np.array([0.5, 0.5]) @ lat.values) == pytest.approx(0.0, abs=1e-6)  # centred over the takers
    assert lat.values[1] > lat.values[0]  # the shifted chunking is ahead


def test_a_chunking_is_named_and_its_overlap_below_its_size():
    with pytest.raises(ValueError, match="overlap_tokens"):
        Chunking("small", max_tokens=50, overlap_tokens=50)
    with pytest.raises(ValueError, match="name"):
        Chunking("a|b")


def test_the_campaign_file_names_two_valid_chunkings_or_none():
    from hcat_pipeline.campaign_spec import CampaignFileError, campaign_sha256, parse_campaign

    base = "name: t\nsystems:\n  - {system_id: bm25, retriever: bm25}\n"
    two = parse_campaign(base + "exam_chunkings:\n  - {name: wide}\n  - {name: narrow, max_tokens: 80, overlap_tokens: 10}\n")
    assert [(c.name, c.max_tokens, c.overlap_tokens) for c in two.exam_chunkings] == [("wide", 200, 40), ("narrow", 80, 10)]
    assert campaign_sha256(two) == campaign_sha256(parse_campaign(base))  # the nights do not read it
    for bad, why in (("  - {name: only}\n", "two chunkings"), ("  - {name: a}\n  - {name: a}\n", "different names"),
                     ("  - {name: a}\n  - {name: b, max_tokens: 40, overlap_tokens: 40}\n", "overlap_tokens")):
        with pytest.raises(CampaignFileError, match=why):
            parse_campaign(base + "exam_chunkings:\n" + bad)
