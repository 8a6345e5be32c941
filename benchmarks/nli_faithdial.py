"""NLI groundedness (HCAT §3.2.2) on the FaithDial audit's held-out part — superseded by
``benchmarks/nli_sets.py``, which reports every public set; this runs it on FaithDial only.

Labels (../shared/validation/README.md): BEGIN ``entailment`` alone = supported (1); any
``hallucination`` (incl. partial) = not supported (0); ``generic`` / ``uncooperative`` left out.
Also home of ``stdlib_docstring_texts``, the corpus of the QA-style check.

    python benchmarks/nli_faithdial.py [--weights PATH] [--limit N]
"""

from __future__ import annotations

import sys
from pathlib import Path

QA_CHECK_MODULES = """argparse asyncio base64 bisect calendar collections contextlib copy csv dataclasses datetime
decimal difflib email enum fileinput fnmatch fractions ftplib functools getopt gettext glob gzip hashlib heapq hmac html
http imaplib inspect io ipaddress itertools json logging lzma mailbox mimetypes numbers operator optparse os pathlib pickle
pkgutil platform plistlib poplib pprint queue random re sched secrets selectors shelve shlex shutil signal smtplib socket
socketserver sqlite3 ssl statistics string struct subprocess tarfile tempfile textwrap threading timeit tokenize trace
traceback types typing unittest urllib uuid warnings weakref xml zipfile zlib""".split()


def stdlib_docstring_texts() -> list[str]:
    """One text per stdlib module: its docstring and those of its public classes and functions."""
    import importlib
    import inspect

    texts = []
    for m in QA_CHECK_MODULES:
        try:
            mod = importlib.import_module(m)
        except Exception:  # noqa: BLE001 - a module missing on this build is skipped
            continue
        parts = [inspect.getdoc(mod) or ""]
        for n, o in sorted(vars(mod).items()):
            if not n.startswith("_") and getattr(o, "__module__", None) == m and (inspect.isfunction(o) or inspect.isclass(o)):
                parts.append(inspect.getdoc(o) or "")
        texts.append("\n\n".join(p for p in parts if p))
    return texts



def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from nli_sets import main as sets_main

    return sets_main(["--sets", "faithdial", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
