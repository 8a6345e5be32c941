"""Dagster ``Config`` classes derived from the core's dataclasses: one field list, one set of defaults.

``config_from(SelectionConfig, "QuerySelectionConfig")`` is a ``dg.Config`` whose fields are the dataclass's fields with
their types and defaults (plus any ``extra`` fields given as ``name=(type, default)``); ``to_core(SelectionConfig,
config)`` turns a run's config back into the core's dataclass. A field added to the dataclass appears in the
launchpad without touching the asset.
"""

from __future__ import annotations

import dataclasses
import typing

import dagster as dg
from pydantic import Field, create_model


def config_from(dc: type, name: str, **extra) -> type[dg.Config]:
    hints = typing.get_type_hints(dc)
    fields = {}
    for f in dataclasses.fields(dc):
        if f.default is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], f.default)
        elif f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], Field(default_factory=f.default_factory))
        else:
            fields[f.name] = (hints[f.name], ...)
    return create_model(name, __base__=dg.Config, **extra, **fields)


def to_core(dc: type, config: dg.Config):
    return dc(**{f.name: getattr(config, f.name) for f in dataclasses.fields(dc)})
