"""The review page (``hcat review``): people label answers and curate golden-set cases in a browser.

HCAT §5 (human labels calibrate every metric), golden-eval §5.3 / §5.5 (human evaluation, confidence-based
routing, inter-rater agreement) and the violation-matching deck's first goal (tools for data collection,
labelling and curation). The core here is plain Python over polars, no Dagster:

- ``items``: the review queue as one screen per answer (passages with the flagged sentences marked,
  the metric scores and their explanations);
- ``labelling``: labels saved to the label store (rater, time) through a label file the
  ``label_file_sensor`` sees, two tabs never overwriting each other; progress and label sufficiency;
- ``curation``: accept / reject / edit a version's cases, frozen as a curated version the way
  ``hcat import-cases`` freezes one;
- ``labelstudio``: the queue as Label Studio tasks, and its annotations back as a label file;
- ``app``: the FastAPI page over the above (templates in ``templates/``, one script in ``static/``).
"""
