"""``hcat`` command line: run campaigns and use the core methods outside the Dagster UI.

Sub-commands live in ``hcat_pipeline.commands`` (one module each, registered in ``commands.COMMANDS``).
"""

from __future__ import annotations

import argparse
import sys

from hcat_pipeline.commands import COMMANDS


def main(argv: list[str] | None = None) -> int:
    _load_plugins()
    parser = argparse.ArgumentParser(prog="hcat", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_, add_args, _) in COMMANDS.items():
        add_args(sub.add_parser(name, help=help_))
    args = parser.parse_args(argv)
    return COMMANDS[args.command][2](args)


def _load_plugins() -> None:
    """Import modules that register further sub-commands (kept next to the core they drive)."""
    import importlib
    import pkgutil

    import hcat_pipeline.commands as pkg

    for m in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{m.name}")


if __name__ == "__main__":
    sys.exit(main())
