"""Sub-commands of ``hcat`` (``hcat_pipeline.cli``): each module of this package registers its own with ``command``
(``COMMANDS``: name -> (help, add_arguments, run)); the CLI imports every module here, nothing here imports the CLI."""

from __future__ import annotations

import argparse
from collections.abc import Callable

COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def command(name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None] = lambda p: None):
    def deco(fn):
        COMMANDS[name] = (help, add_arguments, fn)
        return fn

    return deco
