"""Item Response Theory for generated exams (exam-generation paper §3.3-3.4, §6, App. B-C), pure core.

No Dagster here: numpy / scipy in, dataclasses and arrays out.

- ``fit_irt(responses, model="3pl" | "2pl" | "1pl", components=None, seed=0)`` → ``IRTResult`` (``a``, ``b``,
  ``c``, ``theta``, ``theta_se``, ``neg_log_likelihood``, ``components`` for the hierarchical model).
- ``item_information`` / ``exam_information`` (exact 3PL, eqs. 3-4), ``category_information`` (Figures 3-4).
- ``iterative_improvement`` (App. B.3: drop the least-discriminating quantile, refit, while information improves)
  → ``PruningHistory``.
- ``fit_summary`` (Table 5: RMSE vs the mean-prediction baseline, mean parameters, with n and CIs) and
  ``ability_table`` (Table 3: θ per component level with SE and CI).
- ``bloom_categories`` / ``question_word`` / ``categorize_questions`` (App. C keyword lists, multi-label).
- Plots as PNG bytes: ``hcat_pipeline.irt.plots`` (imported on demand; matplotlib Agg).
"""

from hcat_pipeline.irt.improve import PruningHistory, PruningStep, iterative_improvement
from hcat_pipeline.irt.information import (
    DEFAULT_GRID,
    category_information,
    exam_information,
    information_summary,
    item_information,
)
from hcat_pipeline.irt.model import MODELS, ComponentLatents, IRTBounds, IRTPriors, IRTResult, fit_irt, irt_probability
from hcat_pipeline.irt.stats import ability_table, fit_summary, item_rmse, mean_ci
from hcat_pipeline.irt.taxonomy import (
    BLOOM_KEYWORDS,
    BLOOM_LEVELS,
    QUESTION_WORD_CATEGORIES,
    UNCATEGORIZED,
    bloom_categories,
    categorize_questions,
    question_word,
    spacy_verb_lemmas,
)

__all__ = [
    "BLOOM_KEYWORDS",
    "BLOOM_LEVELS",
    "DEFAULT_GRID",
    "MODELS",
    "ComponentLatents",
    "IRTBounds",
    "IRTPriors",
    "IRTResult",
    "PruningHistory",
    "PruningStep",
    "QUESTION_WORD_CATEGORIES",
    "UNCATEGORIZED",
    "ability_table",
    "bloom_categories",
    "categorize_questions",
    "category_information",
    "exam_information",
    "fit_irt",
    "fit_summary",
    "information_summary",
    "irt_probability",
    "item_information",
    "item_rmse",
    "iterative_improvement",
    "mean_ci",
    "question_word",
    "spacy_verb_lemmas",
]
