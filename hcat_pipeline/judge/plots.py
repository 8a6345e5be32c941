"""Figures of the judge validation (PNG bytes; matplotlib, Agg backend): agreement with humans,
length bias, self-preference, position bias. Pure: frames in, bytes out."""

from __future__ import annotations

import io

import numpy as np
import polars as pl

__all__ = ["validation_figures"]


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()




def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _dims(scores: pl.DataFrame) -> list[str]:
    return sorted(set(scores["dimension"].to_list())) if scores.height else []


def agreement_figure(scores: pl.DataFrame, validation: pl.DataFrame) -> bytes:
    """Per dimension: judge score (1-5) distribution by human label, with κ and n in the title."""
    plt = _plt()
    dims = _dims(scores)
    fig, axes = plt.subplots(1, max(1, len(dims)), figsize=(4.2 * max(1, len(dims)), 3.4), squeeze=False)
    for ax, d in zip(axes[0], dims, strict=False):
        s = scores.filter((pl.col("dimension") == d) & pl.col("score").is_not_null())
        for label, color, off in ((0, "tab:red", -0.18), (1, "tab:green", 0.18)):
            v = s.filter(pl.col("human_label") == label)["score"].to_numpy()
            counts = [int((v == k).sum()) for k in range(1, 6)]
            ax.bar(np.arange(1, 6) + off, counts, width=0.36, color=color, label=f"human {label} (n={v.size})")
        r = validation.filter(pl.col("dimension") == d).row(0, named=True)
        k = "κ undefined" if r["kappa"] is None else f"κ={r['kappa']:.2f} [{r['kappa_ci_low']}, {r['kappa_ci_high']}]"
        ax.set_title(f"{d}: {k}, n={r['n']}\n{'validated' if r['validated'] else 'NOT validated'}", fontsize=9)
        ax.set_xlabel("judge score")
        ax.set_ylabel("items")
        ax.legend(fontsize=7)
    return _png(fig)


def length_figure(scores: pl.DataFrame, validation: pl.DataFrame) -> bytes:
    """Judge score vs answer length (words), coloured by human label: at equal label the cloud should be flat."""
    plt = _plt()
    dims = _dims(scores)
    fig, axes = plt.subplots(1, max(1, len(dims)), figsize=(4.2 * max(1, len(dims)), 3.4), squeeze=False)
    rng = np.random.default_rng(0)
    for ax, d in zip(axes[0], dims, strict=False):
        s = scores.filter((pl.col("dimension") == d) & pl.col("score").is_not_null())
        for label, color in ((0, "tab:red"), (1, "tab:green")):
            g = s.filter(pl.col("human_label") == label)
            y = g["score"].to_numpy() + rng.uniform(-0.12, 0.12, g.height)
            ax.scatter(g["answer_words"].to_numpy(), y, s=18, alpha=0.7, color=color, label=f"human {label}")
        r = validation.filter(pl.col("dimension") == d).row(0, named=True)
        rho = "ρ undefined" if r["length_rho"] is None else f"within-label ρ={r['length_rho']:.2f} [{r['length_rho_ci_low']}, {r['length_rho_ci_high']}]"
        ax.set_title(f"{d}: {rho}", fontsize=9)
        ax.set_xlabel("answer length (words)")
        ax.set_ylabel("judge score (jittered)")
        ax.legend(fontsize=7)
    return _png(fig)


def self_preference_figure(scores: pl.DataFrame, judge_family: str | None) -> bytes:
    """Mean judge score per answer family and human label (the judge's own family marked)."""
    plt = _plt()
    s = scores.filter(pl.col("score").is_not_null()) if scores.height else scores
    fig, ax = plt.subplots(figsize=(6, 3.4))
    if s.height:
        g = (s.with_columns(pl.col("system_family").fill_null("other/unknown"))
             .group_by("system_family", "human_label").agg(pl.col("score").mean().alias("m"), pl.len().alias("n"))
             .sort("system_family", "human_label"))  # fmt: skip
        fams = sorted(set(g["system_family"].to_list()))
        for label, color, off in ((0, "tab:red", -0.2), (1, "tab:green", 0.2)):
            h = {r["system_family"]: r for r in g.filter(pl.col("human_label") == label).iter_rows(named=True)}
            ax.bar(np.arange(len(fams)) + off, [h[f]["m"] if f in h else 0 for f in fams], width=0.4, color=color, label=f"human {label}")
            for i, f in enumerate(fams):
                if f in h:
                    ax.text(i + off, h[f]["m"] + 0.05, f"n={h[f]['n']}", ha="center", fontsize=7)
        ax.set_xticks(range(len(fams)), [f + (" (judge)" if f == judge_family else "") for f in fams])
    ax.set_ylim(0, 5.6)
    ax.set_ylabel("mean judge score")
    ax.set_title(f"self-preference: judge family = {judge_family}", fontsize=9)
    ax.legend(fontsize=7)
    return _png(fig)


def position_figure(pos: dict) -> bytes:
    """Flip rate and first-position rate with their Wilson 95 % intervals."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3))
    names, vals, cis = [], [], []
    for key, ci, name in (("flip_rate", "flip_rate_ci", "verdict flips\nwhen order swapped"),
                          ("first_position_rate", "first_position_ci", "first position\nwins"),
                          ("accuracy_vs_human", "accuracy_ci", "agrees with\nhuman preference")):  # fmt: skip
        if pos.get(key) is not None:
            names.append(name)
            vals.append(pos[key])
            cis.append(pos[ci])
    if vals:
        err = np.array([[v - c[0], c[1] - v] for v, c in zip(vals, cis, strict=True)]).T
        ax.bar(range(len(vals)), vals, yerr=err, capsize=4, color=["tab:orange", "tab:blue", "tab:green"][: len(vals)])
        ax.set_xticks(range(len(vals)), names, fontsize=8)
    ax.axhline(pos.get("max_flip_rate", 0.2), color="grey", ls="--", lw=1)
    ax.set_ylim(0, 1.05)
    ax.set_title(f"position bias: n={pos.get('n', 0)} pairs × 2 orders", fontsize=9)
    return _png(fig)


def validation_figures(result: dict) -> dict[str, bytes]:
    """{name: PNG} for a ``validate_judge`` result (figures without data are left out)."""
    scores, validation = result["scores"], result["validation"]
    figs: dict[str, bytes] = {}
    if scores.height:
        figs["judge_agreement"] = agreement_figure(scores, validation)
        figs["judge_length_bias"] = length_figure(scores, validation)
        figs["judge_self_preference"] = self_preference_figure(scores, result.get("judge_family"))
    if result.get("position_bias"):
        figs["judge_position_bias"] = position_figure(result["position_bias"])
    return figs
