"""Build the shipped reference label sets (hcat_pipeline/reference_labels/) from ../shared/validation.

    python scripts/build_reference_labels.py [--data ../shared/validation]

Writes <set>.parquet, manifest.json (build record: seeds, split counts and id hashes, source file
SHA-256) and copies each source's licence. Deterministic: the same sources give the same files.
See hcat_pipeline.calibration.reference for what is shipped and why.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from hcat_pipeline.calibration.reference import REFERENCE_DIR, REFERENCE_SEED, build_faithdial, build_toxigen
    from hcat_pipeline.resources.embedding import EmbeddingModel

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "validation")
    ap.add_argument("--out", type=Path, default=REFERENCE_DIR)
    ap.add_argument("--seed", type=int, default=REFERENCE_SEED)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    manifest = {"seed": args.seed, "fractions": {"stage1": 0.4, "stage2": 0.4, "evaluation": 0.2}, "sets": {}}
    frame, record = build_faithdial(args.data, args.seed)
    frame.write_parquet(args.out / "faithdial.parquet", compression="zstd")
    manifest["sets"]["faithdial"] = record
    shutil.copyfile(args.data / "faithdial-audit" / "LICENSE", args.out / "LICENSE-faithdial.txt")

    emb = EmbeddingModel(backend="torch")  # the backend the toxicity head recipe used (its near-duplicate groups)
    frame, record = build_toxigen(args.data, emb.embed, args.seed)
    record["embedding_model"] = emb.model_id
    head = ROOT / "hcat_pipeline" / "metrics" / "toxicity" / "toxicity_head.npz"
    if head.is_file():  # check the reproduced split against the head's own record, when it has one
        import numpy as np

        meta = json.loads(str(np.load(head, allow_pickle=False)["meta_json"]))
        record["toxicity_head_split_digest"] = meta.get("split_digest")
        if meta.get("split_digest") and meta["split_digest"] != record["reproduced_split_digest"]:
            raise SystemExit(f"toxigen: reproduced split {record['reproduced_split_digest']} != the head's {meta['split_digest']}")
    frame.write_parquet(args.out / "toxigen.parquet", compression="zstd")
    manifest["sets"]["toxigen"] = record
    shutil.copyfile(args.data / "toxigen-demonstrations" / "LICENSE.txt", args.out / "LICENSE-toxigen.txt")

    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    for name, rec in manifest["sets"].items():
        print(name, rec["n_items"], rec["labels"], rec["split"]["counts"])


if __name__ == "__main__":
    main()
