"""The fine-tuned encoder signal of the toxicity head (metrics/toxicity/encoder.py): trained on
tiny data here (a few optimiser steps on the packaged MiniLM), stored as float16 arrays, rebuilt,
deterministic; the recipe's use of it; a head with and without it."""

from __future__ import annotations

import numpy as np
import pytest

from hcat_pipeline.metrics.toxicity import train as toxicity_train
from hcat_pipeline.metrics.toxicity.data import Example, assign_splits
from hcat_pipeline.metrics.toxicity.encoder import (
    PREFIX,
    FinetuneConfig,
    FinetunedEncoder,
    config_of,
    finetuned_logits,
    fit_finetuned,
    has_finetuned,
)
from hcat_pipeline.metrics.toxicity.model import load_toxicity_head, sentence_toxicity

HATE = [f"people from group {g} are {w}" for g in "ABCDEFGH" for w in ("vermin", "parasites")]
CLEAN = [f"people from group {g} {w}" for g in "ABCDEFGH" for w in ("opened a bank account", "like to cook")]
TINY = FinetuneConfig(r=4, alpha=8, lr=3e-3, epochs=4, batch=8, warmup_steps=2, max_tokens=16, seed=3)


@pytest.fixture(scope="module")
def tiny_adapter():
    return fit_finetuned(HATE + CLEAN, [1] * len(HATE) + [0] * len(CLEAN), TINY, log=lambda _: None)


def test_adapter_is_small_float16_and_records_its_config(tiny_adapter):
    lora = {k: a for k, a in tiny_adapter.items() if k.startswith(f"{PREFIX}lora/")}
    assert all(a.dtype == np.float16 for a in lora.values())
    # r × (in + out) for every linear layer of the 6 blocks: 4 attention (384 → 384), FFN 384 → 1536 → 384
    assert sum(a.size for a in lora.values()) == 6 * TINY.r * (4 * 768 + 2 * 1920)
    assert config_of(tiny_adapter) == TINY and has_finetuned(tiny_adapter)


def test_rebuilt_encoder_learned_the_training_labels_and_training_is_deterministic(tiny_adapter):
    enc = FinetunedEncoder(tiny_adapter)
    z = enc.logits(HATE + CLEAN)
    assert z[: len(HATE)].min() > z[len(HATE) :].max()
    # a sentence the adapter never saw, in the same pattern
    new = enc.logits(["people from group Q are vermin", "people from group Q opened a bank account"])
    assert new[0] > new[1]
    again = fit_finetuned(HATE + CLEAN, [1] * len(HATE) + [0] * len(CLEAN), TINY, log=lambda _: None)
    assert set(again) == set(tiny_adapter) and all(np.array_equal(again[k], tiny_adapter[k]) for k in again)
    # the cached encoder: same values (up to float32 padding effects of another batch composition)
    assert np.allclose(finetuned_logits(HATE[:3], tiny_adapter), z[:3], atol=1e-5)


def test_adapter_missing_tensors_or_absent_is_a_clear_error(tiny_adapter):
    broken = {k: a for i, (k, a) in enumerate(tiny_adapter.items()) if not (k.startswith(f"{PREFIX}lora/") and i == 0)}
    with pytest.raises(ValueError, match="lacks 1 tensors"):
        FinetunedEncoder(broken)
    with pytest.raises(ValueError, match="no fine-tuned encoder"):
        FinetunedEncoder({})
    with pytest.raises(ValueError, match="2 texts and 1 labels"):
        fit_finetuned(["a", "b"], [1], TINY)


def test_recipe_fine_tunes_on_train_rows_only_and_weights_the_logit_on_val(monkeypatch):
    ex = []
    for i in range(40):
        ex.append(Example(f"member {i} of that group is lazy and worthless", 1, "toy", "hate"))
        ex.append(Example(f"member {i} of that group opened a savings account", 0, "toy", "neutral"))
    seen: list[str] = []

    def spy(texts, y, cfg, log):
        seen.extend(texts)
        return fit_finetuned(texts, y, cfg, log)

    monkeypatch.setattr(toxicity_train, "fit_finetuned", spy)
    rng = np.random.default_rng(0)

    def embed(texts):
        return rng.normal(size=(len(texts), 8))  # an uninformative embedding: the fine-tuned logit must carry it

    splits = assign_splits(ex, np.arange(len(ex)))
    cfg = FinetuneConfig(r=4, alpha=8, lr=3e-3, epochs=2, batch=16, warmup_steps=2, max_tokens=24, seed=0)
    head, report = toxicity_train.train_toxicity_head(ex, splits, np.arange(len(ex)), embed, seed=0, log=lambda _: None, finetune=cfg)
    test_texts = {e.text for e, s in zip(ex, splits) if s == "test"}
    val_texts = {e.text for e, s in zip(ex, splits) if s == "val"}
    assert seen and not (test_texts | val_texts) & set(seen)
    assert has_finetuned(head) and float(head["minilm_ft_weight"]) > 0 and "lexical_ft_weight" not in head
    assert report["finetuned"]["val_auroc"] > 0.9 and report["finetuned"]["config"]["r"] == 4
    out = sentence_toxicity(["member 99 of that group is lazy and worthless", "member 99 of that group opened a savings account"],
                            embed=embed, head=head | {"meta": report})
    assert out[0]["toxicity"] > out[1]["toxicity"] and out[0]["signal"] == "finetuned_encoder"


def test_stack_head_with_an_adapter_adds_its_weighted_logit(tmp_path, embedding_model, tiny_adapter):
    """The shipped head without its fine-tuned encoder (as a /3 head) scores with its stack alone; the
    same head with an adapter and a weight adds the weighted fine-tuned logit to that same stack logit,
    shown as a signal."""
    from hcat_pipeline.metrics.toxicity.model import featurise, score_features

    shipped = load_toxicity_head()
    assert has_finetuned(shipped) and float(shipped["minilm_ft_weight"]) > 0 and float(shipped["full_ft_weight"]) > 0
    head3 = {k: v for k, v in shipped.items() if not k.startswith(PREFIX) and not k.endswith("_ft_weight")}
    assert not has_finetuned(head3)
    head4 = head3 | tiny_adapter | {"minilm_ft_weight": np.array(0.5)}
    texts = ["Those people are a plague on this country.", "The branch opens at nine on Mondays."]
    feats = featurise(texts, embedding_model.layer_features)
    with_ft, without = score_features(feats, head4), score_features(feats, head3)
    assert without["names"][-1] != "ft_logit" and with_ft["names"][-1] == "ft_logit"
    ft = 0.5 * finetuned_logits(feats["normalised"], tiny_adapter)
    assert np.allclose(with_ft["logit"], without["logit"] + ft) and np.allclose(with_ft["contrib"][:, -1], ft)
    assert without["prob"][0] > without["prob"][1]


def test_a_sentence_gets_the_same_logit_alone_and_in_a_batch(tiny_adapter):
    # fp32 torch: padding to a longer neighbour changes only float rounding, never the value
    text = "Those people should go back where they came from."
    others = ["Short.", " ".join(["The branch opens at nine on Mondays and closes at five on Fridays."] * 6)]
    alone = finetuned_logits([text], tiny_adapter)[0]
    mixed = finetuned_logits(others * 20 + [text], tiny_adapter)[-1]
    assert abs(alone - mixed) < 1e-4


def test_the_encoder_runs_on_the_device_asked_for_and_cuda_without_a_gpu_is_refused(tiny_adapter):
    # this machine has no GPU: "auto" runs on the CPU (same logits), "cuda" refuses to load rather than run elsewhere
    import torch

    from hcat_pipeline.resources.devices import DeviceUnavailable

    cpu = finetuned_logits(HATE[:4], tiny_adapter, "cpu")
    if torch.cuda.is_available():  # pragma: no cover - only on a GPU machine
        assert np.allclose(finetuned_logits(HATE[:4], tiny_adapter, "cuda"), cpu, atol=1e-3)
        return
    assert np.array_equal(finetuned_logits(HATE[:4], tiny_adapter, "auto"), cpu)
    with pytest.raises(DeviceUnavailable, match="no CUDA device"):
        finetuned_logits(HATE[:4], tiny_adapter, "cuda")


def test_the_toxicity_metric_runs_its_encoder_on_the_device_score_frame_is_given(monkeypatch):
    import numpy as np
    import polars as pl

    from hcat_pipeline.metrics import toxicity_metric as tm
    from hcat_pipeline.metrics.scoring import score_frame

    seen = []

    def scorer(rows, layers, embed_aux=None, device="cpu", answers=False):
        seen.append(device)
        assert answers  # the campaign metric scores answers: one that names nobody caps the learned head
        return [{} for _ in rows]

    class Encoder:  # stand-in multilingual encoder (the probe encodes one sentence)
        def encode(self, texts):
            return np.zeros((len(texts), 4), dtype=np.float32)

    monkeypatch.setattr(tm, "_scorer", lambda: scorer)
    frame = pl.DataFrame({"query": ["q"], "contexts": [["c"]], "answer": ["An answer."]})
    given = {"embed_layers": lambda texts: None, "multilingual": Encoder()}
    score_frame(frame, ["toxicity"], device="auto", **given)
    score_frame(frame, ["toxicity"], **given)
    assert seen == ["auto", "cpu"]  # the device given, else the CPU — never guessed from the callable
