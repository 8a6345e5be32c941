"""HTML pages of two documentation generators (Sphinx, DocBook): headings, captions and navigation stay out of the
sentences a golden case is built from; the heading a chunk sits under becomes its title (issue: "Is Basic Concepts <topic>
the …" questions came from headings glued onto the next sentence)."""

import polars as pl

from hcat_pipeline.common.sentences import clean_heading, headings, is_heading, sentences
from hcat_pipeline.corpus.chunking import chunk_corpus
from hcat_pipeline.corpus.ingest import ingest

SPHINX = """<!DOCTYPE html><html><head><title>Basic Concepts &#8212; Tool 1.0 documentation</title></head><body>
<div class="related" role="navigation"><h3>Navigation</h3><ul><li><a href="genindex.html">index</a></li>
<li class="right"><a href="next.html">next</a> |</li><li><a href="index.html">Tool 1.0 documentation</a> &#187;</li></ul></div>
<div class="document"><div class="body" role="main">
<section id="basic-concepts"><h1>2.1. Basic Concepts<a class="headerlink" href="#basic-concepts" title="Link to this heading">¶</a></h1>
<p>The package cache holds every archive that
was downloaded by the tool until it is cleaned.</p>
<section id="holds"><h2>Holding packages<a class="headerlink" href="#holds">¶</a></h2>
<p>A held package is never upgraded automatically by the tool.</p>
<figure><img src="x.png"/><figcaption><p>Figure 1. The package list screen</p></figcaption></figure>
<div class="highlight"><pre>tool hold pkg
tool unhold pkg</pre></div>
</section></section></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3><p>Quick search</p></div>
<div class="footer">&#169; Copyright 2024, Someone. Created using Sphinx 7.2.</div>
</body></html>"""

DOCBOOK = """<html><head><title>Basic Concepts</title><meta name="generator" content="DocBook XSL Stylesheets V1.79.2"></head>
<body><div class="navheader"><table width="100%" summary="Navigation header"><tr><th colspan="3" align="center">Basic Concepts</th></tr>
<tr><td width="20%" align="left"><a accesskey="p" href="ch01.html">&lt;&lt;&lt; Prev</a> </td><th width="60%" align="center">Chapter 2. Reference guide</th>
<td width="20%" align="right"> <a accesskey="n" href="ch02s02.html">Next &gt;&gt;&gt;</a></td></tr></table><hr></div>
<div class="section"><div class="titlepage"><div><div><h2 class="title"><a name="secBasics"></a>Basic Concepts</h2></div></div></div>
<p>The <span class="command"><strong>tool</strong></span> program keeps a list of the packages
it has installed.</p>
<div class="table"><p class="title"><b>Table 2.1. Package states</b></p><table><tr><th>State</th><th>Meaning</th></tr>
<tr><td>held</td><td>The package is never upgraded.</td></tr></table></div>
<p>Removed packages keep their configuration files until they are purged.</p></div>
<div class="navfooter"><hr><table width="100%"><tr><td align="left"><a href="ch01.html">Prev</a> </td><td align="center"><a href="index.html">Home</a></td>
<td align="right"> <a href="ch02s02.html">Next</a></td></tr></table></div></body></html>"""


def _doc(tmp_path, name, html):
    (tmp_path / name).write_text(html)
    docs, errors, _ = ingest(False, None, paths=[name], base=tmp_path)
    assert errors.height == 0
    return docs.row(0, named=True)


def test_sphinx_page_headings_navigation_and_captions_stay_out_of_sentences(tmp_path):
    doc = _doc(tmp_path, "basics.html", SPHINX)
    text = doc["text"]
    for noise in ("Navigation", "index", "¶", "Quick search", "Copyright", "Figure 1", "Table of Contents"):
        assert noise not in text, noise
    sents = sentences(text)
    assert "The package cache holds every archive that was downloaded by the tool until it is cleaned." in sents
    assert "A held package is never upgraded automatically by the tool." in sents
    assert not any(s.startswith(("Basic", "2.1", "Holding")) for s in sents)  # no heading glued onto a sentence
    assert [t for _, t in headings(text)] == ["Basic Concepts", "Holding packages"]  # section number removed


def test_docbook_page_navigation_and_table_titles_stay_out_of_sentences(tmp_path):
    doc = _doc(tmp_path, "ch02s01.html", DOCBOOK)
    text = doc["text"]
    assert "Prev" not in text and "Next" not in text and "Home" not in text and "Chapter 2. Reference guide" not in text
    sents = sentences(text)
    assert "The tool program keeps a list of the packages it has installed." in sents
    assert "Removed packages keep their configuration files until they are purged." in sents
    assert all("Basic Concepts" not in s and "Table 2.1" not in s for s in sents)


def test_chunks_carry_the_heading_they_sit_under_as_title(tmp_path):
    text = _doc(tmp_path, "basics.html", SPHINX)["text"]
    chunks = chunk_corpus([("d1", text, "Basic Concepts — Tool 1.0 documentation")], max_tokens=20, overlap_tokens=0)
    titles = dict(zip(chunks["text"], chunks["title"], strict=True))
    held = next(t for c, t in titles.items() if "held package is never upgraded" in c)
    cache = next(t for c, t in titles.items() if "package cache holds" in c)
    assert (cache, held) == ("Basic Concepts", "Holding packages")
    plain = chunk_corpus([("d2", "No headings here. Only prose sentences follow each other.")])
    assert plain["title"].to_list() == [None] and isinstance(plain, pl.DataFrame)


def test_heading_rules_for_plain_text():
    assert is_heading("Common Sequence Operations\n**************************")  # pydoc / reST underline
    assert is_heading("2.3. Using aptitude") and clean_heading("2.3. Using aptitude") == "Using aptitude"
    assert clean_heading("Chapter 2. Aptitude reference guide") == "Aptitude reference guide"
    assert is_heading("Next >>>") and is_heading("<<< Prev")
    assert not is_heading("Interest is paid monthly.") and not is_heading("A list:\nfirst item\nsecond item")
    text = "Common Sequence Operations\n**************************\n\nThe operations in the following table are supported by most sequence types."
    assert sentences(text) == ["The operations in the following table are supported by most sequence types."]
