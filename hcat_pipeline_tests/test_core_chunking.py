from pydoc_data.topics import topics

import pytest

from hcat_pipeline.corpus.chunking import approx_token_count, chunk_corpus, chunk_document, sentence_spans

TEXT = (
    "Banks hold deposits. They lend money to households and firms! Do they charge interest? "
    "Yes, they do.\n\nA second paragraph starts here. It has two sentences."
)


def test_sentence_spans_are_exact_slices():
    spans = sentence_spans(TEXT)
    sents = [TEXT[s:e] for s, e in spans]
    assert sents[0] == "Banks hold deposits."
    assert sents[2] == "Do they charge interest?"
    assert sents[-1] == "It has two sentences."
    assert len(sents) == 6


@pytest.mark.parametrize("max_tokens,overlap", [(12, 0), (20, 6), (200, 40)])
def test_chunks_respect_budget_cover_text_and_overlap(max_tokens, overlap):
    text = topics["assignment"]
    chunks = chunk_document(text, max_tokens=max_tokens, overlap_tokens=overlap)
    assert chunks
    for s, e, n in chunks:
        assert n <= max_tokens
        assert approx_token_count(text[s:e]) <= max_tokens
    covered = set()
    for s, e, _ in chunks:
        covered.update(range(s, e))
    for s, e in sentence_spans(text):
        assert {i for i in range(s, e) if not text[i].isspace()} <= covered, "every sentence lands in a chunk"
    starts = [c[0] for c in chunks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    if overlap:
        assert any(chunks[i + 1][0] < chunks[i][1] for i in range(len(chunks) - 1)), "consecutive chunks overlap"
    else:
        assert all(chunks[i + 1][0] >= chunks[i][1] for i in range(len(chunks) - 1))


def test_over_long_sentence_is_wrapped():
    text = " ".join(f"word{i}" for i in range(100)) + "."
    chunks = chunk_document(text, max_tokens=30, overlap_tokens=0)
    assert len(chunks) >= 4 and all(n <= 30 for *_, n in chunks)


def test_chunk_corpus_ids_are_stable_and_offsets_reproduce():
    docs = [("d1", TEXT), ("d2", topics["if"])]
    a = chunk_corpus(docs, max_tokens=30, overlap_tokens=8)
    b = chunk_corpus(docs, max_tokens=30, overlap_tokens=8)
    assert a.equals(b)
    assert a["chunk_id"].n_unique() == a.height
    text_of = dict(docs)
    for row in a.iter_rows(named=True):
        assert text_of[row["doc_id"]][row["start"] : row["end"]] == row["text"]


def test_bad_parameters_raise():
    with pytest.raises(ValueError):
        chunk_document(TEXT, max_tokens=10, overlap_tokens=10)


def test_a_hard_wrapped_sentence_is_one_sentence_and_no_chunk_starts_mid_sentence():
    # plain text wrapped at a fixed width (a licence, a manual, pydoc): a line break is not a sentence end
    text = ("A compilation of a covered work with other separate and independent\nworks is called an\n"
            '"aggregate" if the compilation is not used to limit the\nrights of its users.  Inclusion of a covered work\n'
            "in an aggregate does not cause this License to apply.\n\nA new paragraph starts here.")  # fmt: skip
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got[0].startswith("A compilation") and got[0].endswith("rights of its users.") and len(got) == 3
    assert got[1].startswith("Inclusion") and got[2] == "A new paragraph starts here."
    wrapped = topics["assert"]  # the default corpus is wrapped pydoc text
    starts = [wrapped[s:].lstrip("\"'`(*")[:1] for s, _e, _n in chunk_document(wrapped, max_tokens=60, overlap_tokens=10)]
    assert starts and all(not c.islower() for c in starts), starts
