"""Observable source assets: what automation watches, each observed by content hash.

* ``corpus_files``: the corpus drop folder (``data/corpus/``) + the embedded default corpus;
* ``gates_file``: the release gates file (``gates.yaml`` / ``HCAT_GATES_FILE``);
* ``nli_head_file``: the NLI head the metrics load (retrained by ``hcat train-nli`` / the ``nli_head`` asset).

Their data version is the content hash, so an observation of unchanged content is not an update and
triggers nothing; a changed hash makes the assets downstream (``hcat_pipeline.automation``) stale and,
where they are ``eager``, re-materialized by the automation sensor. Label files are watched by
``label_file_sensor`` (sensors.py), which imports them into ``human_labels``.
"""

from pathlib import Path

import dagster as dg

from hcat_pipeline.automation import SOURCE_OBSERVE_CRON
from hcat_pipeline.corpus.content_hash import corpus_sha256, file_sha256

_observe = dg.AutomationCondition.cron_tick_passed(SOURCE_OBSERVE_CRON)


@dg.observable_source_asset(group_name="corpus", automation_condition=_observe,
                            description="The campaign file's corpus: its paths, or data/corpus/ + the embedded default corpus "
                            "when it names none; data version = content hash.")  # fmt: skip
def corpus_files(context) -> dg.ObserveResult:
    from hcat_pipeline.campaign_spec import CampaignFileError, corpus_sources, load_campaign

    try:
        corpus = load_campaign().corpus
    except CampaignFileError as e:
        raise dg.Failure(f"corpus_files: the campaign file cannot be read: {e}") from e
    src = corpus_sources(corpus)
    sha, n = corpus_sha256(src["drop_folder"], include_embedded=src["include_embedded"], paths=src["paths"])
    return dg.ObserveResult(data_version=dg.DataVersion(sha[:16]),
                            metadata={"files": n, "folder": str(src["drop_folder"] or ""), "paths": dg.MetadataValue.json(src["paths"]),
                                      "embedded_reference": src["include_embedded"], "sha256": sha})  # fmt: skip


def _file_result(path: Path, what: str) -> dg.ObserveResult:
    if not path.is_file():
        raise dg.Failure(f"{what}: {path} does not exist")
    sha = file_sha256(path)
    return dg.ObserveResult(data_version=dg.DataVersion(sha[:16]), metadata={"path": str(path), "sha256": sha})


@dg.observable_source_asset(group_name="gates", automation_condition=_observe,
                            description="The release gates file (gates.yaml / HCAT_GATES_FILE); data version = SHA-256.")  # fmt: skip
def gates_file(context) -> dg.ObserveResult:
    from hcat_pipeline.gates.spec import DEFAULT_GATES_FILE

    return _file_result(Path(DEFAULT_GATES_FILE), "gates_file")


@dg.observable_source_asset(group_name="metrics", automation_condition=_observe,
                            description="The NLI head the groundedness metrics load; data version = SHA-256.")  # fmt: skip
def nli_head_file(context) -> dg.ObserveResult:
    from hcat_pipeline.resources.nli import PACKAGED_HEAD

    return _file_result(Path(PACKAGED_HEAD), "nli_head_file")
