"""The fine-tuned encoder signal of the toxicity head (``ft_logit``): the packaged all-MiniLM-L6-v2
with a LoRA adapter (``peft``) on every linear layer of its encoder and one linear layer over the
mean-pooled last hidden state, trained on the head's own training rows (train split + augmentation +
neutral prose, ``toxicity.train.training_rows``) as hate vs not.

The frozen sentence vectors the other signals read cannot separate politely worded hate from
neutral talk about the same group well enough (the layer-feature logistic model: implicit vs
not_hate 0.83 on the val split); letting the encoder itself move is what lifts it (measured in
``benchmarks/toxicity_finetune_val.py``). LoRA keeps the trained part small enough to ship inside
``toxicity_head.npz`` as plain float16 arrays (prefix ``ft/``; no pickle, no second file): the
packaged MiniLM weights are the base, verified by their SHA-256 (``models.minilm_path``).

``fit_finetuned`` trains (torch, seeded, deterministic order); ``FinetunedEncoder`` rebuilds the
model from the stored arrays, merges the adapter into the weights and scores texts.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from hcat_pipeline.resources.devices import Device

PREFIX = "ft/"
# every linear layer inside the 6 encoder blocks (query, key, value, attention output, FFN in / out)
TARGET_MODULES = r".*encoder\.layer\.\d+\..*(query|key|value|dense)$"


@dataclass(frozen=True)
class FinetuneConfig:
    """Defaults chosen on the val split of the toxicity data (``benchmarks/toxicity_finetune_val.py``)."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.1
    lr: float = 5e-4
    weight_decay: float = 0.01
    epochs: int = 2
    batch: int = 32
    warmup_steps: int = 50
    max_tokens: int = 128
    seed: int = 0


def _base_model():
    from transformers import AutoModel, AutoTokenizer

    from hcat_pipeline.models import minilm_path

    path = str(minilm_path())
    return AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path)  # its pooler is loaded, never used


def _with_adapter(model, cfg: FinetuneConfig):
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=cfg.r, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout, target_modules=TARGET_MODULES)
    return get_peft_model(model, lora)


def _pooled(model, tok, texts: Sequence[str], max_tokens: int):
    b = tok(list(texts), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt").to(model.device)
    h = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state
    m = b["attention_mask"].unsqueeze(-1).to(h.dtype)
    return (h * m).sum(1) / m.sum(1).clamp(min=1e-9)


def _length_batches(texts: Sequence[str], order: list[int], size: int, rng: random.Random | None) -> list[list[int]]:
    """Batches of similar length (less padding); shuffled batch order when ``rng`` is given."""
    order = sorted(order, key=lambda i: len(texts[i]) // 40) if rng else sorted(order, key=lambda i: len(texts[i]))
    batches = [order[k : k + size] for k in range(0, len(order), size)]
    if rng:
        rng.shuffle(batches)
    return batches


def fit_finetuned(
    texts: Sequence[str], y: Sequence[int], cfg: FinetuneConfig = FinetuneConfig(), log: Callable[[str], None] = print
) -> dict[str, np.ndarray]:
    """Train the adapter and the linear layer (AdamW, ``warmup_steps`` linear warm-up then linear
    decay, binary cross-entropy) and return them as arrays for the head (``ft/…`` keys, float16)."""
    import torch
    from peft import get_peft_model_state_dict

    if len(texts) != len(y) or not len(texts):
        raise ValueError(f"fit_finetuned: {len(texts)} texts and {len(y)} labels")
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    tok, base = _base_model()
    model = _with_adapter(base, cfg)
    head = torch.nn.Linear(base.config.hidden_size, 1)
    params = [p for p in model.parameters() if p.requires_grad] + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    order = list(range(len(texts))) * cfg.epochs
    rng.shuffle(order)
    batches = _length_batches(texts, order, cfg.batch, rng)
    n = len(batches)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup_steps) * max(0.0, 1 - s / n))
    yt = torch.tensor(np.asarray(y, dtype=np.float32))
    model.train()
    t0 = time.perf_counter()
    for k, bi in enumerate(batches):
        z = head(_pooled(model, tok, [texts[i] for i in bi], cfg.max_tokens)).squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, yt[bi])
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        if k % 100 == 0 or k == n - 1:
            log(f"    fine-tune step {k + 1}/{n}: loss {loss.item():.3f} ({time.perf_counter() - t0:.0f} s)")
    arrays = {f"{PREFIX}lora/{k}": v.detach().numpy().astype(np.float16) for k, v in get_peft_model_state_dict(model).items()}
    arrays[f"{PREFIX}linear_weight"] = head.weight.detach().numpy()[0].astype(np.float16)
    arrays[f"{PREFIX}linear_bias"] = np.array(float(head.bias.detach()), dtype=np.float32)
    arrays[f"{PREFIX}config"] = np.array([f"{k}={v}" for k, v in asdict(cfg).items()])
    return arrays


def has_finetuned(head: dict) -> bool:
    return f"{PREFIX}linear_weight" in head


def config_of(head: dict) -> FinetuneConfig:
    defaults = asdict(FinetuneConfig())
    kv = dict(str(s).split("=", 1) for s in head[f"{PREFIX}config"])
    return FinetuneConfig(**{k: type(defaults[k])(v) for k, v in kv.items() if k in defaults})


def digest(head: dict) -> str:
    h = hashlib.sha256()
    for k in sorted(k for k in head if isinstance(k, str) and k.startswith(PREFIX)):
        h.update(k.encode())
        h.update(np.ascontiguousarray(head[k]).tobytes())
    return h.hexdigest()[:16]


class FinetunedEncoder:
    """The fine-tuned MiniLM rebuilt from a head's ``ft/`` arrays, adapter merged into the weights, on ``device``
    (``"cpu"`` or ``"cuda"``: ``resources.devices.torch_device``)."""

    def __init__(self, head: dict, device: str = "cpu"):
        import torch
        from peft import set_peft_model_state_dict

        if not has_finetuned(head):
            raise ValueError("toxicity: this head has no fine-tuned encoder (no ft/ arrays)")
        self.cfg = config_of(head)
        self.tok, base = _base_model()
        model = _with_adapter(base, self.cfg)
        state = {k[len(PREFIX) + 5 :]: torch.from_numpy(head[k].astype(np.float32)) for k in head if isinstance(k, str) and k.startswith(f"{PREFIX}lora/")}
        res = set_peft_model_state_dict(model, state)
        if missing := [k for k in res.missing_keys if "lora_" in k]:
            raise ValueError(f"toxicity: the fine-tuned adapter lacks {len(missing)} tensors (e.g. {missing[0]})")
        self.model = model.merge_and_unload().eval().to(device)
        self.weight = torch.from_numpy(head[f"{PREFIX}linear_weight"].astype(np.float32)).to(device)
        self.bias = float(head[f"{PREFIX}linear_bias"])

    def logits(self, texts: Sequence[str], batch: int = 64) -> np.ndarray:
        import torch

        out = np.zeros(len(texts), dtype=np.float64)
        with torch.inference_mode():
            for bi in _length_batches(texts, list(range(len(texts))), batch, None):
                z = _pooled(self.model, self.tok, [texts[i] for i in bi], self.cfg.max_tokens) @ self.weight + self.bias
                out[bi] = z.cpu().numpy()
        return out


_ENCODERS: dict[tuple[str, str], FinetunedEncoder] = {}


def finetuned_logits(texts: Sequence[str], head: dict, device: Device = "cpu") -> np.ndarray:
    """``ft_logit`` per text (one encoder per head and device, built on first use and kept for the process);
    ``device``: ``auto | cpu | cuda`` as for the other encoders (``resources.devices``)."""
    from hcat_pipeline.resources.devices import torch_device

    key = (digest(head), torch_device(device))
    if key not in _ENCODERS:
        _ENCODERS.clear()  # one head at a time: a new head replaces the old encoder
        _ENCODERS[key] = FinetunedEncoder(head, key[1])
    return _ENCODERS[key].logits(texts) if len(texts) else np.zeros(0)
