"""Topic strata: HCAT paper §2, steps 2-3 (dimensionality reduction, clustering to define strata).

Chunk embeddings (step 1) are projected to a low-dimensional space (PCA or UMAP), clustered
(K-Means with k chosen by silhouette, DBSCAN or HDBSCAN), noise points are handled explicitly
(kept as their own stratum ``-1`` or attached to the nearest cluster), and every stratum gets a
human-readable label from its most distinctive terms (class-based TF-IDF, as in BERTopic,
Grootendorst 2022) and a size. ``plot_strata`` draws the paper's Figure 1.

Everything is seeded: same embeddings + parameters ⇒ same strata. No dagster here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, get_args

import numpy as np
import polars as pl

Reduction = Literal["pca", "umap"]
Clustering = Literal["kmeans", "dbscan", "hdbscan"]
NoiseMode = Literal["own_stratum", "nearest"]  # own_stratum: stratum -1; nearest: the closest cluster centroid
PlotProjection = Literal["auto", "pca", "umap"]
REDUCTIONS, CLUSTERINGS = get_args(Reduction), get_args(Clustering)
NOISE_MODES, PLOT_PROJECTIONS = get_args(NoiseMode), get_args(PlotProjection)
NOISE_STRATUM = -1
NOISE_LABEL_PREFIX = "noise"
# words scikit-learn's English stop list drops that are content words in many corpora (banking first)
CONTENT_WORDS = frozenset(
    "interest bill amount system fire call name part top bottom detail describe empty full fill move "
    "show side front back keep find found give serious".split()
)


@dataclass(frozen=True)
class StrataParams:
    """Every knob of steps 2-3 (defaults suit ~1k chunks of 384-d sentence embeddings)."""

    # step 2: dimensionality reduction
    reduction: Reduction = "umap"
    n_components: int = 5
    umap_n_neighbors: int = 15
    umap_min_dist: float = 0.0
    umap_metric: str = "cosine"
    umap_low_memory: bool = True
    umap_n_epochs: int | None = None  # None: umap-learn's default (200 for large, 500 for small data)
    # step 3: clustering
    clustering: Clustering = "kmeans"
    n_clusters: int = 0  # K-Means: fixed k; 0 ⇒ chosen by silhouette over [k_min, k_max]
    k_min: int = 6  # silhouette favours few clusters; a floor keeps strata fine enough to spread a campaign
    k_max: int = 16
    silhouette_sample_size: int = 5000  # silhouette on a seeded subsample (O(n²) otherwise)
    dbscan_eps: float = 0.5
    dbscan_min_samples: int = 5
    hdbscan_min_cluster_size: int = 10
    hdbscan_min_samples: int = 0  # 0 ⇒ same as min_cluster_size (scikit-learn's default)
    noise: NoiseMode = "own_stratum"  # own_stratum (stratum -1) | nearest (closest cluster centroid)
    # labels
    label_terms: int = 4
    # 2-D coordinates for the plot (Figure 1): auto ⇒ reuse the reduction if it is 2-D, else a
    # second 2-D UMAP when reducing with UMAP on up to umap_2d_max_points chunks, else PCA of the
    # reduced space (cheap)
    plot_projection: PlotProjection = "auto"
    umap_2d_max_points: int = 20000
    seed: int = 0
    threads: int = 1  # BLAS/OpenMP threads for clustering (1 is fastest on a busy 2-core machine)

    def validate(self) -> None:
        for name, value, allowed in (
            ("reduction", self.reduction, REDUCTIONS),
            ("clustering", self.clustering, CLUSTERINGS),
            ("noise", self.noise, NOISE_MODES),
            ("plot_projection", self.plot_projection, PLOT_PROJECTIONS),
        ):
            if value not in allowed:
                raise ValueError(f"strata parameter {name}={value!r}: expected one of {allowed}")
        if self.n_components < 1:
            raise ValueError(f"strata parameter n_components={self.n_components}: must be >= 1")
        if self.clustering == "kmeans" and not self.n_clusters and not (2 <= self.k_min <= self.k_max):
            raise ValueError(f"strata parameters k_min={self.k_min}, k_max={self.k_max}: need 2 <= k_min <= k_max")
        if self.n_clusters < 0:
            raise ValueError(f"strata parameter n_clusters={self.n_clusters}: must be >= 0")


@dataclass
class StrataResult:
    """Output of ``build_strata``: the per-chunk table plus what a reader needs to trust it."""

    frame: pl.DataFrame  # chunk_id, stratum (Int32), stratum_label, x, y (Float32)
    strata: pl.DataFrame  # stratum, stratum_label, size, share, terms (list)
    reduced: np.ndarray  # the reduced coordinates the clustering saw
    silhouette_by_k: dict[int, float] = field(default_factory=dict)
    chosen_k: int | None = None
    silhouette: float | None = None  # of the final clustering (on the subsample, noise excluded)
    n_noise: int = 0  # points the clusterer called noise (before noise handling)
    timings: dict[str, float] = field(default_factory=dict)
    params: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# step 2: dimensionality reduction


def reduce_dimensions(
    embeddings: np.ndarray,
    method: str = "umap",
    n_components: int = 5,
    seed: int = 0,
    *,
    n_neighbors: int = 15,
    min_dist: float = 0.0,
    metric: str = "cosine",
    low_memory: bool = True,
    n_epochs: int | None = None,
) -> np.ndarray:
    """Project ``embeddings`` (n × d) to ``n_components`` dimensions with PCA or UMAP (seeded)."""
    x = np.asarray(embeddings, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array, got shape {x.shape}")
    n, d = x.shape
    k = max(1, min(n_components, d, max(n - 1, 1)))
    if method == "pca":
        from sklearn.decomposition import PCA

        solver = "randomized" if n > 2000 and k < min(n, d) // 2 else "full"
        out = PCA(n_components=k, svd_solver=solver, random_state=seed).fit_transform(x)
        return _fix_signs(out).astype(np.float32)
    if method == "umap":
        if n < max(20, k + 3):  # too few points for a manifold: fall back to PCA rather than fail
            return reduce_dimensions(x, "pca", n_components, seed)
        import warnings

        import umap

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*n_jobs value 1 overridden.*")
            warnings.filterwarnings("ignore", message=".*random_state.*parallelism.*")
            model = umap.UMAP(
                n_components=k,
                n_neighbors=max(2, min(n_neighbors, n - 1)),
                min_dist=min_dist,
                metric=metric,
                low_memory=low_memory,
                n_epochs=n_epochs,
                random_state=seed,  # seeded ⇒ deterministic (umap then runs single-threaded)
                init="spectral" if n > k + 1 else "random",
                verbose=False,
            )
            out = model.fit_transform(x)
        return np.asarray(out, dtype=np.float32)
    raise ValueError(f"reduction method {method!r}: expected one of {REDUCTIONS}")


def _fix_signs(components: np.ndarray) -> np.ndarray:
    """Make PCA output sign-deterministic (largest-magnitude coordinate of each axis positive)."""
    idx = np.abs(components).argmax(axis=0)
    signs = np.sign(components[idx, np.arange(components.shape[1])])
    signs[signs == 0] = 1
    return components * signs


# --------------------------------------------------------------------------------------------
# step 3: clustering


def _subsample(n: int, size: int, seed: int) -> np.ndarray:
    if size <= 0 or n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def silhouette(x: np.ndarray, labels: np.ndarray, sample_size: int = 5000, seed: int = 0) -> float | None:
    """Silhouette score on a seeded subsample, noise (-1) excluded; None when undefined."""
    from sklearn.metrics import silhouette_score

    keep = np.flatnonzero(labels != NOISE_STRATUM)
    if keep.size < 3:
        return None
    idx = keep[_subsample(keep.size, sample_size, seed)]
    n_labels = len(np.unique(labels[idx]))
    if n_labels < 2 or n_labels >= idx.size:
        return None
    return float(silhouette_score(x[idx], labels[idx]))


def _kmeans(x: np.ndarray, k: int, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(x)


def select_k_by_silhouette(
    x: np.ndarray, k_min: int, k_max: int, seed: int = 0, sample_size: int = 5000
) -> tuple[int, dict[int, float], np.ndarray]:
    """K-Means for every k in [k_min, k_max]; keep the k with the highest silhouette (ties: smaller k).

    Returns (best k, {k: silhouette}, labels of the best k).
    """
    n = x.shape[0]
    k_max = min(k_max, n - 1)
    if k_max < 2:
        return 1, {}, np.zeros(n, dtype=np.int64)
    k_min = max(2, min(k_min, k_max))
    scores: dict[int, float] = {}
    best: tuple[float, int, np.ndarray] | None = None
    for k in range(k_min, k_max + 1):
        labels = _kmeans(x, k, seed)
        s = silhouette(x, labels, sample_size, seed)
        if s is None:
            continue
        scores[k] = round(s, 6)
        if best is None or s > best[0] + 1e-12:
            best = (s, k, labels)
    if best is None:
        return 1, scores, np.zeros(n, dtype=np.int64)
    return best[1], scores, best[2]


def cluster(x: np.ndarray, params: StrataParams) -> tuple[np.ndarray, dict]:
    """Cluster reduced coordinates; labels use -1 for noise (DBSCAN / HDBSCAN only)."""
    info: dict = {}
    if params.clustering == "kmeans":
        if params.n_clusters:
            k = min(params.n_clusters, x.shape[0])
            labels = _kmeans(x, k, params.seed) if k > 1 else np.zeros(x.shape[0], dtype=np.int64)
            info["chosen_k"] = k
        else:
            k, scores, labels = select_k_by_silhouette(
                x, params.k_min, params.k_max, params.seed, params.silhouette_sample_size
            )
            info["chosen_k"], info["silhouette_by_k"] = k, scores
        return labels, info
    if params.clustering == "dbscan":
        from sklearn.cluster import DBSCAN

        return DBSCAN(eps=params.dbscan_eps, min_samples=params.dbscan_min_samples).fit_predict(x), info
    if params.clustering == "hdbscan":
        from sklearn.cluster import HDBSCAN

        labels = HDBSCAN(
            min_cluster_size=max(2, params.hdbscan_min_cluster_size),
            min_samples=params.hdbscan_min_samples or None,
            copy=True,  # explicit (scikit-learn 1.9 warns about the default changing)
        ).fit_predict(x)
        return labels, info
    raise ValueError(f"clustering method {params.clustering!r}: expected one of {CLUSTERINGS}")


def handle_noise(x: np.ndarray, labels: np.ndarray, mode: str = "own_stratum") -> np.ndarray:
    """Noise points (-1) stay their own stratum (``own_stratum``) or join the nearest cluster centroid."""
    labels = np.asarray(labels).copy()
    noise = labels == NOISE_STRATUM
    if mode == "own_stratum" or not noise.any():
        return labels
    if mode != "nearest":
        raise ValueError(f"noise mode {mode!r}: expected one of {NOISE_MODES}")
    ids = np.unique(labels[~noise])
    if ids.size == 0:
        raise ValueError(
            "every point is noise: no cluster to attach noise to (loosen the clustering, e.g. larger "
            "dbscan_eps or smaller hdbscan_min_cluster_size, or use noise='own_stratum')"
        )
    centroids = np.stack([x[labels == c].mean(axis=0) for c in ids])
    d2 = ((x[noise][:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    labels[noise] = ids[d2.argmin(axis=1)]
    return labels


def renumber_by_size(labels: np.ndarray) -> np.ndarray:
    """Stable stratum ids: clusters renumbered 0..K-1 by decreasing size (ties: first occurrence); -1 kept."""
    labels = np.asarray(labels)
    out = np.full(labels.shape, NOISE_STRATUM, dtype=np.int32)
    ids, first, counts = np.unique(labels, return_index=True, return_counts=True)
    order = sorted((i for i in range(ids.size) if ids[i] != NOISE_STRATUM), key=lambda i: (-counts[i], first[i]))
    for new, i in enumerate(order):
        out[labels == ids[i]] = new
    return out


# --------------------------------------------------------------------------------------------
# labels: class-based TF-IDF


def label_stop_words() -> list[str]:
    """scikit-learn's English stop words minus ``CONTENT_WORDS`` (sorted, deterministic)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return sorted(ENGLISH_STOP_WORDS - CONTENT_WORDS)


def ctfidf_terms(
    texts: Sequence[str], labels: Sequence[int], top_n: int = 4, stop_words: str | list[str] | None = "english"
) -> dict[int, list[str]]:
    """The ``top_n`` most distinctive terms of every class by class-based TF-IDF (BERTopic's c-TF-IDF).

    All texts of a class are joined into one document; for term t and class c,
    ``W(t, c) = tf(t, c) · log(1 + A / f(t))`` with tf the term frequency normalised by the class's
    term count, f(t) the frequency of t over all classes and A the average term count per class.
    """
    from sklearn.feature_extraction.text import CountVectorizer

    labels = np.asarray(labels)
    classes = sorted(set(labels.tolist()))
    joined = [" ".join(t for t, lab in zip(texts, labels) if lab == c) for c in classes]
    vectorizer = CountVectorizer(
        stop_words=label_stop_words() if stop_words == "english" else stop_words,
        token_pattern=r"(?u)\b[^\W\d]\w+\b",  # words of 2+ chars not starting with a digit (keeps __init__)
        lowercase=True,
    )
    try:
        counts = vectorizer.fit_transform(joined).toarray().astype(np.float64)
    except ValueError:  # empty vocabulary (e.g. only numbers / stop words)
        return {c: [] for c in classes}
    vocab = np.asarray(vectorizer.get_feature_names_out())
    per_class = counts.sum(axis=1, keepdims=True)
    tf = np.divide(counts, per_class, out=np.zeros_like(counts), where=per_class > 0)
    f_t = counts.sum(axis=0)
    avg = counts.sum() / max(len(classes), 1)
    idf = np.log1p(avg / np.maximum(f_t, 1e-12))
    w = tf * idf
    out: dict[int, list[str]] = {}
    for row, c in enumerate(classes):
        # ties broken alphabetically so labels are deterministic
        order = np.lexsort((vocab, -w[row]))
        out[c] = [str(vocab[j]) for j in order[:top_n] if w[row, j] > 0]
    return out


def stratum_label(stratum: int, terms: Sequence[str]) -> str:
    """Human-readable label: the distinctive terms joined by commas (noise prefixed ``noise:``)."""
    text = ", ".join(terms) if terms else f"stratum {stratum}"
    return f"{NOISE_LABEL_PREFIX}: {text}" if stratum == NOISE_STRATUM else text


# --------------------------------------------------------------------------------------------
# steps 2-3 together


def project_2d(embeddings: np.ndarray, reduced: np.ndarray, params: StrataParams) -> np.ndarray:
    """2-D coordinates for Figure 1 (see ``StrataParams.plot_projection``)."""
    if reduced.shape[1] == 2:
        return reduced
    how = params.plot_projection
    if how == "auto":
        how = "umap" if params.reduction == "umap" and embeddings.shape[0] <= params.umap_2d_max_points else "pca"
    if how == "umap":
        out = reduce_dimensions(
            embeddings, "umap", 2, params.seed, n_neighbors=params.umap_n_neighbors, min_dist=max(params.umap_min_dist, 0.1),
            metric=params.umap_metric, low_memory=params.umap_low_memory, n_epochs=params.umap_n_epochs,
        )
    else:
        out = reduce_dimensions(reduced if reduced.shape[1] > 2 else embeddings, "pca", 2, params.seed)
    if out.shape[1] < 2:  # a tiny corpus (fewer points than dimensions): the missing axis is 0
        out = np.hstack([out, np.zeros((out.shape[0], 2 - out.shape[1]), dtype=np.float32)])
    return out


def build_strata(
    chunk_ids: Sequence[str], texts: Sequence[str], embeddings: np.ndarray, params: StrataParams | None = None
) -> StrataResult:
    """HCAT §2 steps 2-3 on chunk embeddings: reduce, cluster, handle noise, label, lay out in 2-D."""
    params = params or StrataParams()
    params.validate()
    x = np.asarray(embeddings, dtype=np.float32)
    n = x.shape[0] if x.ndim == 2 else 0
    if n == 0 or len(chunk_ids) != n or len(texts) != n:
        raise ValueError(f"build_strata: need one embedding per chunk (chunks={len(chunk_ids)}, texts={len(texts)}, embeddings={n})")
    timings: dict[str, float] = {}

    t = time.perf_counter()
    reduced = reduce_dimensions(
        x, params.reduction, params.n_components, params.seed, n_neighbors=params.umap_n_neighbors,
        min_dist=params.umap_min_dist, metric=params.umap_metric, low_memory=params.umap_low_memory,
        n_epochs=params.umap_n_epochs,
    )
    timings["reduce_s"] = time.perf_counter() - t

    t = time.perf_counter()
    from threadpoolctl import threadpool_limits

    with threadpool_limits(max(1, params.threads)):
        raw, info = cluster(reduced, params)
        n_noise = int((raw == NOISE_STRATUM).sum())
        labels = renumber_by_size(handle_noise(reduced, raw, params.noise))
        final_sil = silhouette(reduced, labels, params.silhouette_sample_size, params.seed)
    timings["cluster_s"] = time.perf_counter() - t

    t = time.perf_counter()
    terms = ctfidf_terms(texts, labels, params.label_terms)
    names = {c: stratum_label(c, ts) for c, ts in terms.items()}
    seen: dict[str, int] = {}
    for c in sorted(names):  # labels name strata (e.g. in sampling weights): keep them unique
        seen[names[c]] = seen.get(names[c], 0) + 1
        if seen[names[c]] > 1:
            names[c] = f"{names[c]} [{c}]"
    timings["label_s"] = time.perf_counter() - t

    t = time.perf_counter()
    xy = project_2d(x, reduced, params)
    timings["project_2d_s"] = time.perf_counter() - t

    frame = pl.DataFrame(
        {
            "chunk_id": pl.Series(list(chunk_ids), dtype=pl.String),
            "stratum": pl.Series(labels, dtype=pl.Int32),
            "stratum_label": pl.Series([names[int(c)] for c in labels], dtype=pl.String),
            "x": pl.Series(xy[:, 0], dtype=pl.Float32),
            "y": pl.Series(xy[:, 1], dtype=pl.Float32),
        }
    )
    return StrataResult(
        frame=frame,
        strata=strata_summary(frame, terms),
        reduced=reduced,
        silhouette_by_k=info.get("silhouette_by_k", {}),
        chosen_k=info.get("chosen_k"),
        silhouette=None if final_sil is None else round(final_sil, 6),
        n_noise=n_noise,
        timings={k: round(v, 3) for k, v in timings.items()},
        params=asdict(params),
    )


def strata_summary(frame: pl.DataFrame, terms: dict[int, list[str]] | None = None) -> pl.DataFrame:
    """One row per stratum: stratum, stratum_label, size, share (of all chunks), terms."""
    out = (
        frame.group_by("stratum", "stratum_label")
        .agg(pl.len().cast(pl.Int64).alias("size"))
        .with_columns((pl.col("size") / pl.col("size").sum()).alias("share"))
        .sort("stratum")
    )
    if terms is not None:
        out = out.with_columns(
            pl.Series("terms", [terms.get(int(s), []) for s in out["stratum"]], dtype=pl.List(pl.String))
        )
    return out


# --------------------------------------------------------------------------------------------
# Figure 1


def plot_strata(frame: pl.DataFrame, path: str | Path, title: str = "Topic strata", max_points: int = 20000, seed: int = 0) -> Path:
    """Scatter of chunks in 2-D coloured by stratum (HCAT Figure 1), saved as PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = frame.select("stratum", "stratum_label", "x", "y")
    if data.height > max_points:  # keep the PNG light; a seeded subsample of points
        data = data[np.sort(np.random.default_rng(seed).choice(data.height, max_points, replace=False)).tolist()]
    sizes = frame.group_by("stratum", "stratum_label").len().sort("stratum")
    strata = sizes["stratum"].to_list()
    cmap = plt.get_cmap("tab20" if len(strata) > 10 else "tab10")
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=80)
    point = 10 if data.height < 2000 else max(1.0, 10 * math.sqrt(2000 / data.height))
    for i, (s, label, size) in enumerate(sizes.iter_rows()):
        sub = data.filter(pl.col("stratum") == s)
        color = "lightgrey" if s == NOISE_STRATUM else cmap(i % cmap.N)
        short = label if len(label) <= 38 else label[:37] + "…"
        ax.scatter(sub["x"].to_numpy(), sub["y"].to_numpy(), s=point, color=color, alpha=0.8, linewidths=0,
                   label=f"{s}: {short} ({size})")
    ax.set_xlabel("D1")
    ax.set_ylabel("D2")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7, markerscale=1.5, frameon=False)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(path)
    return path
