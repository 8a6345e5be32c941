"""``hcat`` command line: run campaigns and use the core methods outside the Dagster UI.

Sub-commands register themselves in ``COMMANDS`` (name -> (help, add_arguments, run)).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def command(name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None] = lambda p: None):
    def deco(fn):
        COMMANDS[name] = (help, add_arguments, fn)
        return fn

    return deco


def _campaign_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", default=None, help="golden-set version name (default: gs-<hash of the candidates>)")


@command("campaign", "run the whole campaign (generation, freeze, responses, metrics) as real Dagster runs", _campaign_args)
def _campaign(args: argparse.Namespace) -> int:
    from hcat_pipeline.campaign import run_campaign

    t0 = time.perf_counter()
    ok, version = run_campaign(version=args.version)
    print(f"campaign {'succeeded' if ok else 'FAILED'} (golden-set version {version}) in {time.perf_counter() - t0:.1f}s")
    return 0 if ok else 1


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
    # run as `python -m hcat_pipeline.cli`: use the importable module, where sub-commands register
    from hcat_pipeline.cli import main as _main

    sys.exit(_main())
