"""Sensors: re-run what changed (new frozen golden-set versions, new corpus files, …)."""
