"""Production monitoring (golden-eval §7, §9.3-9.4): the user's own service logs read as another input of the lineage —
a day's rows ingested (bad rows counted and named), a stratified sample scored with the nights' reference-free
metrics, acute / drift / per-stratum / novel anomalies tested with their evidence, and reviewed incidents turned into
candidate golden cases. Pure functions over polars and numpy; the Dagster face is ``assets/monitoring.py``."""
