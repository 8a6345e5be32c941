"""Sub-commands of `hcat` (each module registers its own with hcat_pipeline.cli.command)."""
