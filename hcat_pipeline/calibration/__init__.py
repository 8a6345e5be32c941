"""Double calibration of machine scores against human labels (HCAT paper §5), pure core.

No Dagster here: numpy / polars / scikit-learn / statsmodels in and out, usable from an asset, the
``hcat`` command, a notebook or a test.

Stage 1, probability calibration: ``Calibrator(method="platt" | "isotonic" | "ordinal")``,
``.fit(scores, labels)`` / ``.predict_proba(scores) -> (n, K)``.
  platt    → scikit-learn ``LogisticRegression`` (multinomial for K > 2)
  isotonic → scikit-learn ``IsotonicRegression`` (cumulative curves for ordinal K > 2)
  ordinal  → statsmodels ``OrderedModel`` (proportional odds, logit); chosen over ``mord``, whose last
             release is from 2023, and statsmodels also gives Fleiss' κ.
Stage 2, split conformal prediction: ``SplitConformal(alpha)``, ``.fit(probs, labels)`` on an
independent hold-out, ``.qhat``, ``.predict_sets(probs) -> bool (n, K)``; non-conformity
``1 − P(Y = y | x)``, ``q̂`` = the ⌈(n+1)(1−α)⌉-th smallest score, ``q̂ = +∞`` (every label in every
set) when that rank exceeds n. Plain numpy: ``crepes`` (smoothed p-values, no q̂) and MAPIE (wraps a
fitted estimator) add nothing to ten lines of order statistics; see ``conformal``.

Around them: ``make_splits`` (seeded, disjoint, stratified Stage 1 / Stage 2 / evaluation parts, with
a record), ``label_sufficiency`` (how many more labels of which class before calibrating),
``read_label_file`` / ``LabelStore`` (validated, atomic, idempotent, versioned label imports),
``agreement`` / ``consensus_labels`` (Cohen / weighted / Fleiss κ per dimension; one label per item),
and report metrics (ECE, Brier, reliability curve, coverage, set sizes).
"""

from hcat_pipeline.calibration.agreement import AGREEMENT_SCHEMA, agreement, consensus_labels, latest_per_rater
from hcat_pipeline.calibration.calibrators import METHODS, Calibrator
from hcat_pipeline.calibration.conformal import SplitConformal, conformal_rank, set_labels
from hcat_pipeline.calibration.labels import (
    DEFAULT_SCALES,
    ERROR_SCHEMA,
    LABEL_SCHEMA,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    Scale,
    parse_scale,
    read_label_file,
)
from hcat_pipeline.calibration.metrics import (
    brier_score,
    coverage,
    expected_calibration_error,
    mean_set_size,
    reliability_curve,
    set_size_distribution,
)
from hcat_pipeline.calibration.splits import DEFAULT_FRACTIONS, SPLITS, Splits, allocate, make_splits
from hcat_pipeline.calibration.store import STORE_SCHEMA, ImportResult, LabelStore
from hcat_pipeline.calibration.sufficiency import LabelSufficiency, label_sufficiency, min_holdout_size

__all__ = [
    "AGREEMENT_SCHEMA",
    "DEFAULT_FRACTIONS",
    "DEFAULT_SCALES",
    "ERROR_SCHEMA",
    "LABEL_SCHEMA",
    "METHODS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "SPLITS",
    "STORE_SCHEMA",
    "Calibrator",
    "ImportResult",
    "LabelStore",
    "LabelSufficiency",
    "Scale",
    "SplitConformal",
    "Splits",
    "agreement",
    "allocate",
    "brier_score",
    "conformal_rank",
    "consensus_labels",
    "coverage",
    "expected_calibration_error",
    "label_sufficiency",
    "latest_per_rater",
    "make_splits",
    "mean_set_size",
    "min_holdout_size",
    "parse_scale",
    "read_label_file",
    "reliability_curve",
    "set_labels",
    "set_size_distribution",
]
