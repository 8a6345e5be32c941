"""Partition definitions, defined once: every per-version asset uses ``golden_set_version``."""

import dagster as dg

golden_set_version = dg.DynamicPartitionsDefinition(name="golden_set_version")
