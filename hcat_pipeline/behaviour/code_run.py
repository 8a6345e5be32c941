"""``code_runs``: executable verification of a code answer (golden-eval §3.2.1 code correctness, §5.2 "executable
verification"), deterministic and offline.

A case whose reference is code carries its checks as constraints ``check: <python statement>`` (``assert add(2, 3) ==
5``); a user's case file gives them (``hcat import-cases``). The answer's code — its fenced ```python blocks, else the
whole answer when it parses as Python — runs with the checks after it in a **sandboxed subprocess**: a fresh isolated
interpreter (``python -I``) in an empty temporary folder, no environment, CPU time, address space, file size and
core limits (``resource``, set by the child before the answer runs), a wall-clock timeout that kills it, and no network — a network namespace of its own
(``unshare -rn``) where the machine allows it, and in every case the socket module disabled before the answer's code
runs. Verdict pass when the code and every check run to the end; fail naming the failed check, the error, the timeout,
or that the answer holds no code; score 1 / 0.
"""

from __future__ import annotations

import ast
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

CHECK = "check: "
FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S | re.I)
PRELUDE = """import socket as _socket
def _no_network(*args, **kwargs):
    raise OSError("network access is disabled in the sandbox")
_socket.socket = _socket.create_connection = _socket.getaddrinfo = _socket.socketpair = _no_network
del _socket, _no_network
"""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 5.0
    cpu_s: int = 5
    memory_mb: int = 512
    file_mb: int = 8


def code_checks(case: dict) -> list[str]:
    """The case's ``check:`` statements (none: not a code case)."""
    return [c[len(CHECK):].strip() for c in case.get("constraints") or [] if isinstance(c, str) and c.startswith(CHECK)]


def answer_code(answer: str) -> str | None:
    """The code an answer gives: its fenced python blocks joined, else the whole answer when it parses, else None."""
    blocks = FENCE.findall(answer or "")
    if blocks:
        return "\n".join(b.strip("\n") for b in blocks)
    try:
        ast.parse(answer or "")
    except SyntaxError:
        return None
    return answer if (answer or "").strip() else None


def _limits_code(limits: Limits) -> str:
    """The child sets its own limits first (no ``preexec_fn``: unsafe in a threaded parent such as a Dagster step)."""
    return (f"import resource as _r\n_r.setrlimit(_r.RLIMIT_CPU, ({limits.cpu_s}, {limits.cpu_s}))\n"
            f"_r.setrlimit(_r.RLIMIT_AS, ({limits.memory_mb << 20}, {limits.memory_mb << 20}))\n"
            f"_r.setrlimit(_r.RLIMIT_FSIZE, ({limits.file_mb << 20}, {limits.file_mb << 20}))\n"
            "_r.setrlimit(_r.RLIMIT_CORE, (0, 0))\n_r.setrlimit(_r.RLIMIT_NPROC, (64, 64))\ndel _r\n")  # fmt: skip


def _isolated_network() -> list[str]:
    """``unshare -rn`` when it works here (a network namespace with no interface), else nothing (the prelude still holds)."""
    exe = shutil.which("unshare")
    if exe and subprocess.run([exe, "-rn", "true"], capture_output=True).returncode == 0:
        return [exe, "-rn"]
    return []


def run_sandboxed(code: str, limits: Limits = Limits(), nonce: str = "") -> tuple[str, str]:
    """("passed" | "failed" | "timeout", what happened) of running ``code`` in the sandbox; with ``nonce``, it passed
    only when it printed it (ran to its last line)."""
    with tempfile.TemporaryDirectory(prefix="hcat-code-") as cwd:
        cmd = [*_isolated_network(), sys.executable, "-I", "-c", _limits_code(limits) + PRELUDE + code]
        proc = subprocess.Popen(cmd, cwd=cwd, env={}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, start_new_session=True)  # its own process group: killed whole on timeout
        try:
            out, err = proc.communicate(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return "timeout", f"timed out after {limits.timeout_s:g} s (killed)"
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if done.returncode == 0 and (not nonce or nonce in (done.stdout or "")):
        return "passed", "ran to the end"
    if done.returncode == 0:
        return "failed", "exited before its checks ran (sys.exit / os._exit in the answer)"
    last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return "failed", last[:300]


def code_runs(case: dict, answer: str, limits: Limits = Limits()) -> tuple[str, float, str, dict]:
    """(verdict, score, evidence, detail) for a code case (``code_checks`` non-empty)."""
    checks = code_checks(case)
    code = answer_code(answer)
    if code is None:
        return "fail", 0.0, "the answer holds no code to run", {"ran": False, "checks": len(checks)}
    named = [f"try:\n    {c}\nexcept AssertionError:\n    raise AssertionError({f'check {i} failed: {c}'!r}) from None" for i, c in enumerate(checks, 1)]
    nonce = secrets.token_hex(8)  # printed only once every check ran: an answer that exits early never passes
    # the answer runs as a module (not __main__: its `if __name__ == "__main__": sys.exit(main())` does not fire), then
    # the checks in its namespace
    program = (f"_ns = {{'__name__': 'answer'}}\nexec(compile({code!r}, 'answer.py', 'exec'), _ns)\n"
               f"exec(compile({chr(10).join(named)!r}, 'checks.py', 'exec'), _ns)\nprint({nonce!r})\n")
    status, what = run_sandboxed(program, limits, nonce)
    ok = status == "passed"
    evidence = f"ran with its {len(checks)} check(s): all held" if ok else f"{status}: {what}"
    return ("pass" if ok else "fail"), float(ok), evidence, {"ran": True, "status": status, "checks": len(checks)}
