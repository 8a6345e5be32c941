"""Lineage stage: exam_topics — the exam's accuracy and item information per topic stratum and taker (exam-generation
paper App. A.5, "Granular Analysis of Results"; §6.1-6.2 for the information per category).

exam + exam_responses + irt_model → one row per taker (LLM × retriever × ICL) × topic: n, correct, accuracy with its
Wilson 95 % interval, the taker's θ, the topic's kept items and their mean information at θ; the metadata draws the
mean item information curve per topic. The campaign report shows it beside exam_report. Core: ``exam/topics.py``.
"""

import dagster as dg
import numpy as np
import polars as pl

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.assets.exam import same_exam_version
from hcat_pipeline.common.images import png_markdown
from hcat_pipeline.exam.topics import topic_information, topic_table
from hcat_pipeline.schemas import EXAM_TOPICS


@dg.asset(
    group_name="exam",
    description="Exam accuracy (with n and 95% CI) and mean item information at the taker's θ per topic stratum × taker "
    "(exam paper App. A.5): which topics a system handles, and where the exam measures it precisely.",
)
def exam_topics(context: dg.AssetExecutionContext, exam: pl.DataFrame, exam_responses: pl.DataFrame, irt_model: pl.DataFrame) -> pl.DataFrame:
    from hcat_pipeline.irt.plots import plot_category_information

    version = same_exam_version("exam_topics", exam, exam_responses, irt_model)
    thetas = dict(irt_model.filter(pl.col("kind") == "taker").select("id", "theta").iter_rows())
    items = irt_model.filter(pl.col("kind") == "item")
    table = topic_table(exam_responses, exam, items, thetas).with_columns(pl.lit(version).alias("exam_version"))
    table = table.select([pl.col(c).cast(t) for c, t in EXAM_TOPICS.items()])
    curves = topic_information(exam, items)
    meta = {}
    if curves:
        png = plot_category_information(np.linspace(-4, 4, 161), curves, f"Mean item information per topic ({version})")
        meta["information_by_topic"] = dg.MetadataValue.md(png_markdown(png, "information per topic"))
    weakest = table.filter(pl.col("n") > 0).sort("accuracy").head(20)
    context.add_output_metadata({
        "dagster/row_count": table.height, "exam_version": version, "topics": table["topic"].n_unique(),
        "takers": table["system_id"].n_unique(),
        "lowest_accuracy": preview(weakest.select("system_id", "topic", "n", "accuracy", "ci_low", "ci_high", "mean_information"), 20),
        **meta,
    })  # fmt: skip
    return table
