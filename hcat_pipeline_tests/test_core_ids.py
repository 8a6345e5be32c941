"""common/ids.py and common/prompts.py replaced hand-written sha256[:n] snippets: the values must not move
(golden-set case ids, corpus hashes, config hashes and prompt hashes are stored keys). The expected
strings below were produced by the code before the change."""

import hashlib

import pytest

from hcat_pipeline.common.ids import canonical_json, json_hash, sha256_hex, short_hash
from hcat_pipeline.common.prompts import available_prompts, load_prompt
from hcat_pipeline.corpus import chunking, ingest
from hcat_pipeline.golden import cases as golden
from hcat_pipeline.golden import counterfactual, generation, robustness
from hcat_pipeline.responses import rag


def test_ids_keep_their_values():
    assert rag.config_hash({"a": 1, "b": [1, "x"], "é": "ü"}) == "d69069bd87f9783f"
    # max_tokens given: the default moved to the campaign schema's 96 (one field list), the hash of a config did not;
    # attack_max_tokens joined the identity in issue 46 (answers where declining is expected stop earlier: new answers)
    assert rag.system_config_hash(rag.SystemConfig("sys1", max_tokens=128), "local/qwen", "abcdef012345") == "553e7c54588d6058"
    assert generation.query_id_for("simple", ["c1", "c2"], 7, "0123456789abcdef") == "q-1bf7e6cc1f12"
    case = {"query": "Qué es ü?", "query_type": "simple", "source_chunk_ids": ["c1"]}
    assert golden.case_id_for(case) == "gc-bcd70278cd1071e1"  # non-ASCII kept as UTF-8 in the canonical JSON
    assert golden.corpus_hash(["d2", "d1", "d1"]) == "a000e27b005e0fad"
    assert golden.corpus_hash([]) == "e3b0c44298fc1c14"  # SHA-256 of the empty string
    assert robustness.canary_for("gc-1") == "CANARY-87D44283"
    assert counterfactual.pair_id_for("gc-1", "gender") == "pair-27bf0dab4f"
    assert counterfactual.pair_id_for("gc-1", "gender", 2) == "pair-4ceba04d69"
    assert ingest.doc_id_for("héllo") == "3c48591d8d098a45"
    assert chunking.chunk_id_for("d1", 0, 10) == "3d8fb6db97093c33"


def test_prompt_hashes_keep_their_values_and_lengths():
    text, sha = rag.load_prompt("rag_v1")
    assert sha == "597addfe70ad" and text == load_prompt("rag_v1").text
    assert load_prompt("query_simple_v1").hash == "3d672d36b0c117fe" == generation.load_prompt("query_simple_v1").hash
    assert load_prompt("harm_judge_v1").sha(12) == "b02ad5f8e3cd"  # what safety.load_harm_prompt records
    assert load_prompt("rag_v1").sha(12) == hashlib.sha256(text.encode()).hexdigest()[:12]


def test_short_hash_is_sha256_prefix_of_the_joined_parts():
    assert short_hash("a", "b", n=12) == hashlib.sha256(b"a|b").hexdigest()[:12]
    assert short_hash("d1", "0", "5", sep=":") == sha256_hex("d1:0:5")[:16]
    assert short_hash(n=64) == sha256_hex(b"")
    assert json_hash({"b": 1, "a": "é"}) == sha256_hex('{"a": "\\u00e9", "b": 1}')[:16]
    assert canonical_json({"b": 1, "a": "é"}, compact=True, ascii_only=False) == '{"a":"é","b":1}'
    with pytest.raises(ValueError):
        short_hash("x", n=0)


def test_prompt_loader_errors_and_rereads_an_edited_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="available"):
        load_prompt("nope")
    assert "rag_v1" in available_prompts()
    (tmp_path / "p.txt").write_text("### user\nHello {{name}}")
    first = load_prompt("p", tmp_path)
    assert first.render(name="Ada") == [{"role": "user", "content": "Hello Ada"}]
    assert first.fill(name="Ada") == "### user\nHello Ada"
    with pytest.raises(ValueError, match="no value"):
        first.render()
    (tmp_path / "p.txt").write_text("### user\nHi there, {{name}}!")
    assert load_prompt("p", tmp_path).hash != first.hash  # not a stale cached copy
