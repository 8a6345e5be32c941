"""Would a fine-tuned encoder lift the toxicity head? Judged on the *val* split only (the test split
is never read here, so the answer can choose what to build next without touching the reported data).

MiniLM (the packaged all-MiniLM-L6-v2, torch) fully fine-tuned on the toxicity train split
(``toxicity_data`` split protocol; batch 32, AdamW lr 4e-5, 50 warm-up steps then linear decay,
mean pooling + a linear layer, max 64 tokens), then on the val split: AUROC (all, implicit vs
not_hate) of the fine-tuned logit, of the shipped head (``full`` variant) and of their rank average.

    nice -n 19 python benchmarks/toxicity_finetune_val.py [--epochs 2] [--data ../shared/validation]

Measured 2026-11-23 (quiet machine, 62 examples/s): 1 epoch (207 s) implicit 0.834 alone, head 0.834,
rank average 0.846; 2 epochs (391 s) 0.845 alone, rank average 0.851. Nothing is saved.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "validation")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch
    from scipy.stats import rankdata
    from sklearn.metrics import roc_auc_score
    from transformers import AutoModel, AutoTokenizer

    from hcat_pipeline.core.metrics.toxicity import sentence_toxicity
    from hcat_pipeline.core.metrics.toxicity_data import assign_splits, load_all, near_duplicate_groups
    from hcat_pipeline.models import minilm_path
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.multilingual import MultilingualEncoder

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    torch.set_num_threads(2)
    ex, _ = load_all(args.data)
    emb = EmbeddingModel()
    splits = np.asarray(assign_splits(ex, near_duplicate_groups(emb.embed([e.text for e in ex]))))
    tr, va = list(np.flatnonzero(splits == "train")), list(np.flatnonzero(splits == "val"))

    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    model = AutoModel.from_pretrained(str(minilm_path()))
    head = torch.nn.Linear(model.config.hidden_size, 1)
    opt = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=4e-5, weight_decay=0.01)

    def logits(texts: list[str]):
        b = tok(texts, padding=True, truncation=True, max_length=64, return_tensors="pt")
        mask = b["attention_mask"].unsqueeze(-1).float()
        return head((model(**b).last_hidden_state * mask).sum(1) / mask.sum(1)).squeeze(-1)

    order = tr * args.epochs
    rng.shuffle(order)
    order.sort(key=lambda i: len(ex[i].text) // 40)  # length buckets: less padding
    batches = [order[k : k + 32] for k in range(0, len(order), 32)]
    rng.shuffle(batches)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50) * max(0.0, 1 - s / len(batches)))
    t0 = time.perf_counter()
    model.train()
    for k, bi in enumerate(batches):
        y = torch.tensor([float(ex[i].label) for i in bi])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits([ex[i].text for i in bi]), y)
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        if k % 100 == 0:
            print(f"step {k}/{len(batches)} loss {loss.item():.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    model.eval()
    with torch.inference_mode():
        ft = np.concatenate([logits([ex[i].text for i in va[k : k + 64]]).numpy() for k in range(0, len(va), 64)])
    texts = [ex[i].text for i in va]
    cur = np.array([r["toxicity"] for r in sentence_toxicity(texts, emb.layer_features, embed_aux=MultilingualEncoder().encode)])
    yv = np.array([ex[i].label for i in va])
    kinds = np.array([ex[i].kind for i in va])
    imp = (kinds == "implicit_hate") | (kinds == "not_hate")
    avg = rankdata(ft) + rankdata(cur)
    print(f"val split (n = {len(va)}; implicit vs not_hate n = {int(imp.sum())}), {args.epochs} epoch(s), "
          f"{time.perf_counter() - t0:.0f} s")
    for name, s in (("fine-tuned MiniLM", ft), ("shipped head (full)", cur), ("rank average", avg)):
        print(f"  {name:22s} all {roc_auc_score(yv, s):.4f}   implicit {roc_auc_score(yv[imp], s[imp]):.4f}")


if __name__ == "__main__":
    main()
