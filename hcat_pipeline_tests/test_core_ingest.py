import json

import polars as pl

from hcat_pipeline.corpus.ingest import doc_id_for, ingest


def _write(folder, name, data):
    p = folder / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


def test_embedded_default_corpus_is_pydoc_topics():
    docs, errors, _ = ingest(include_embedded=True, drop_folder=None)
    from pydoc_data.topics import topics

    assert docs.height == len({t.strip() for t in topics.values() if t.strip()})
    assert errors.height == 0
    assert docs["doc_id"].n_unique() == docs.height
    row = docs.filter(pl.col("source") == "pydoc_data.topics:assert").row(0, named=True)
    assert row["title"] == 'The "assert" statement'
    assert row["doc_id"] == doc_id_for(row["text"])


def test_bad_files_are_reported_and_the_rest_ingested(tmp_path):
    folder = tmp_path / "corpus"
    _write(folder, "good.txt", "A savings account pays interest monthly.\n\nFees apply to wires.")
    _write(folder, "good.md", "# Loans\n\nA loan has a principal and an interest rate.")
    _write(folder, "page.html", "<html><head><title>Cards</title><style>x{}</style></head><body><p>Credit cards have limits.</p><script>var a=1</script></body></html>")
    _write(folder, "empty.txt", b"")
    _write(folder, "binary.txt", b"\x00\x01\x02binary")
    _write(folder, "latin1.txt", "caf\xe9 cr\xe8me".encode("latin-1"))
    _write(folder, "huge.txt", "x" * 5000)
    _write(folder, "notes.docx", b"PK\x03\x04")
    _write(folder, ".hidden.txt", "ignored")
    lines = [
        json.dumps({"text": "Mortgage rates are fixed or variable.", "title": "Mortgages", "lang": "en"}),
        "{not json",
        json.dumps({"title": "no text"}),
        json.dumps(["a", "list"]),
        "",
        json.dumps({"text": "Overdrafts incur a fee."}),
    ]
    _write(folder, "docs.jsonl", "\n".join(lines))
    docs, errors, _ = ingest(include_embedded=False, drop_folder=folder, max_file_bytes=4000)

    assert sorted(docs["title"].to_list()) == sorted(["A savings account pays interest monthly.", "Loans", "Cards", "Mortgages", "Overdrafts incur a fee."])
    html = docs.filter(pl.col("title") == "Cards")["text"].item()
    assert "Credit cards have limits." in html and "var a" not in html and "x{}" not in html
    meta = json.loads(docs.filter(pl.col("title") == "Mortgages")["metadata"].item())
    assert meta["lang"] == "en" and meta["line"] == 1

    reasons = {(r["file"], r["line"]): r["reason"] for r in errors.iter_rows(named=True)}
    assert reasons[("empty.txt", None)] == "empty file"
    assert "binary" in reasons[("binary.txt", None)]
    assert "UTF-8" in reasons[("latin1.txt", None)] and "offset 3" in reasons[("latin1.txt", None)]
    assert "oversized" in reasons[("huge.txt", None)]
    assert "unsupported" in reasons[("notes.docx", None)]
    assert "malformed JSON" in reasons[("docs.jsonl", 2)]
    assert "'text'" in reasons[("docs.jsonl", 3)]
    assert "JSON object" in reasons[("docs.jsonl", 4)]
    assert len(reasons) == 8
    assert not any(".hidden" in f for f, _ in reasons)


def test_pdf_text_is_extracted(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = tmp_path / "corpus"
    folder.mkdir()
    fig = plt.figure()
    fig.text(0.1, 0.5, "Wire transfers settle within one business day.")
    fig.savefig(folder / "policy.pdf")
    plt.close(fig)
    _write(folder, "broken.pdf", b"%PDF-1.4 garbage that is not a pdf")
    docs, errors, _ = ingest(include_embedded=False, drop_folder=folder)
    assert docs.height == 1
    assert "Wire transfers settle" in docs["text"].item()
    assert errors["file"].to_list() == ["broken.pdf"]
    assert "PDF" in errors["reason"].item()


def test_identical_documents_are_deduplicated(tmp_path):
    folder = tmp_path / "c"
    _write(folder, "a.txt", "Same text.")
    _write(folder, "b.txt", "Same text.")
    docs, _, dupes = ingest(include_embedded=False, drop_folder=folder)
    assert docs.height == 1 and dupes == 1


def test_campaign_paths_folders_files_globs_and_missing_entries(tmp_path):
    from hcat_pipeline.corpus.ingest import ingest

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.md").write_text("# One\n\nThe first document talks about savings accounts and interest.")
    (tmp_path / "a" / ".hidden.md").write_text("hidden")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two.html").write_text("<html><body><p>The second document explains card disputes.</p></body></html>")
    (tmp_path / "b" / "skip.txt").write_text("Not matched by the glob.")
    docs, errors, _ = ingest(False, None, paths=["a", "b/*.html", "missing/"], base=tmp_path)
    assert sorted(docs["title"].to_list()) == ["One", "two"] or docs.height == 2
    assert not docs["text"].str.contains("hidden|Not matched").any()
    assert errors.height == 1 and errors["file"][0] == "missing/" and "matches no file" in errors["reason"][0]
    assert not docs["source"].str.contains("pydoc").any()  # the embedded reference is not mixed in


def test_a_terminal_capture_is_ingested_as_plain_text(tmp_path):
    """A man page saved from a terminal carries ANSI escapes and backspace overstrike; no question or answer should:
    the document is ingested as the text a reader sees."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "man.txt").write_text("N\bNA\bAM\bME\bE\n  man - an interface to the \x1b[1msystem reference manuals\x1b[22m\x07\n", encoding="utf-8")
    frame, errors, _ = ingest(include_embedded=False, drop_folder=docs)
    assert frame["text"][0] == "NAME\n  man - an interface to the system reference manuals" and errors.height == 0


def test_html_superscripts_and_subscripts_are_not_flattened_into_the_number(tmp_path):
    """Issue 68: "modulo 2<sup>32</sup>" read as "modulo 232" made a reference nobody could sign."""
    (tmp_path / "p.html").write_text("<html><body><p>Arithmetic is done modulo 2<sup>32</sup>; the log is log<sub>2</sub> n.</p></body></html>")
    docs, errors, _ = ingest(False, None, paths=["p.html"], base=tmp_path)
    text = docs["text"].item()
    assert errors.height == 0 and "modulo 2^32;" in text and "log_2 n" in text and "232" not in text
