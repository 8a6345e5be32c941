"""Dagster ``Config`` classes derived from the core's dataclasses: one field list, one set of defaults.

``config_from(SelectionConfig, "QuerySelectionConfig")`` is a ``dg.Config`` whose fields are the dataclass's fields with
their types and defaults (plus any ``extra`` fields given as ``name=(type, default)``); ``to_core(SelectionConfig,
config)`` turns a run's config back into the core's dataclass. A field added to the dataclass appears in the
launchpad without touching the asset.
"""

from __future__ import annotations

import dataclasses
import types
import typing

import dagster as dg
from pydantic import Field, create_model


def config_from(dc: type, name: str, base: type[dg.Config] = dg.Config, exclude: tuple[str, ...] = (), **extra) -> type[dg.Config]:
    """A ``dg.Config`` (subclass of ``base``) with the dataclass's fields, types and defaults; a field's ``metadata``
    (description, ge, le, min_length …) becomes its pydantic ``Field`` arguments. ``exclude``: fields left out."""
    hints = {k: _dagster_type(t) for k, t in typing.get_type_hints(dc).items()}
    fields = {}
    for f in dataclasses.fields(dc):
        if f.name in exclude:
            continue
        if f.default is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], Field(default=f.default, **f.metadata))
        elif f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], Field(default_factory=f.default_factory, **f.metadata))
        else:
            fields[f.name] = (hints[f.name], Field(..., **f.metadata))
    return create_model(name, __base__=base, **fields, **extra)


def _dagster_type(t):
    """``X | None`` (PEP 604) as ``Optional[X]``: Dagster's config schema reads ``typing.Union``, not ``types.UnionType``."""
    return typing.Union[t.__args__] if isinstance(t, types.UnionType) else t  # noqa: UP007


def to_core(dc: type, config: dg.Config, **extra):
    """The core's dataclass from a config derived by ``config_from`` (``extra``: values of excluded fields)."""
    return dc(**{f.name: getattr(config, f.name) for f in dataclasses.fields(dc) if f.name not in extra}, **extra)
