"""Item Response Theory for generated exams (exam-generation paper §3.3-3.4, §6, App. B-C), pure core.

No Dagster here: numpy / scipy in, dataclasses and arrays out.

- ``fit_irt(responses, model="3pl" | "2pl" | "1pl", components=None, seed=0)`` → ``IRTResult`` (``a``, ``b``,
  ``c``, ``theta``, ``theta_se``, ``neg_log_likelihood``, ``components`` for the hierarchical model).
- ``item_information`` / ``exam_information`` (exact 3PL, eqs. 3-4), ``category_information`` (Figures 3-4).
"""

from hcat_pipeline.irt.information import (
    DEFAULT_GRID,
    category_information,
    exam_information,
    information_summary,
    item_information,
)
from hcat_pipeline.irt.model import MODELS, ComponentLatents, IRTBounds, IRTPriors, IRTResult, fit_irt, irt_probability

__all__ = [
    "DEFAULT_GRID",
    "MODELS",
    "ComponentLatents",
    "IRTBounds",
    "IRTPriors",
    "IRTResult",
    "category_information",
    "exam_information",
    "fit_irt",
    "information_summary",
    "irt_probability",
    "item_information",
]
