"""hcat_pipeline: human-calibrated, offline evaluation campaigns for RAG / LLM systems.

Importing the package pins the model stack offline: every model comes from a package that ships
its weights, so no library may reach a model hub at run time.
"""

import os as _os

for _k, _v in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",
}.items():
    _os.environ.setdefault(_k, _v)

__version__ = "0.1.0"
