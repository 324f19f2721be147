"""Running one page: its blocks in order, in one scratch folder, as a user would paste them.

This module runs inside the page's own process (``python -m docs_check --host PAGE``), which
the runner starts in a network namespace of its own when it can, so that two pages may both
start a server on port 5683. Shell blocks and console commands run in ``bash``; Python blocks
run in this process, in one namespace per page (a later block sees an earlier block's names).
Background processes a block starts (``coapcc server ... &``) live until the page ends.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from .blocks import Block, Page, console_commands, diff, matches, session_examples

DEFAULT_TIMEOUT = 120.0
#: A block marked long (a full reproduction, a release build) has this much by default.
LONG_TIMEOUT = 3600.0
#: Lines of a failing command's output shown in the report.
TAIL = 40

#: Sourced before every shell block and console command: Cargo commands run in the checkout
#: (its manifest and its target/), everything else in the page's folder.
PRELUDE = 'cargo() { (cd "$DOCS_CHECK_REPO" && command cargo "$@"); }\n'


@dataclass
class Result:
    where: str
    kind: str
    status: str  # passed | failed | skipped | long
    reason: str = ""
    detail: str = ""
    seconds: float = 0.0


class BlockTimeout(Exception):
    pass


def _tail(text: str, n: int = TAIL) -> str:
    lines = text.rstrip("\n").splitlines()
    if len(lines) > n:
        lines = [f"[... {len(lines) - n} lines above]", *lines[-n:]]
    return "\n".join(lines)


def _bash(command: str, timeout: float, env: dict, strict: bool = True) -> tuple[int | None, str]:
    """Run ``command`` in bash; its exit status (None: timed out) and output (stdout and stderr).

    ``strict``: as a script, with errexit and pipefail (a shell block: every command must
    succeed); without, as typed at a prompt (a console command: its line's status counts).

    The output goes through a file, not a pipe: a background process the command leaves
    running keeps its output open, and must not keep this call waiting."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out:
        opts = ["-e", "-o", "pipefail"] if strict else []
        p = subprocess.Popen(
            ["bash", "--noprofile", "--norc", *opts, "-c", PRELUDE + command],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            rc: int | None = p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            rc = None
        out.seek(0)
        return rc, out.read()


def _alarm(seconds: float):
    def handler(signum, frame):
        raise BlockTimeout(f"timed out after {seconds:g} s")

    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _python(
    code: str, name: str, offset: int, ns: dict, timeout: float, mode: str = "exec"
) -> tuple[str, str | None]:
    """Execute Python source; (what it printed, ``Name: message`` of an exception or None).

    Line numbers in tracebacks are the page's (the source is compiled at its offset)."""
    buf = io.StringIO()
    try:
        compiled = compile("\n" * offset + code, name, mode)
    except SyntaxError as e:
        return "", f"SyntaxError: {e}"
    _alarm(timeout)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            exec(compiled, ns)
    except BlockTimeout as e:
        return buf.getvalue(), f"timed out: {e}"
    except Exception as e:  # what the user would see
        buf.write("".join(traceback.format_exception(type(e), e, e.__traceback__)[-6:]))
        return buf.getvalue(), f"{type(e).__name__}: {e}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return buf.getvalue(), None


def _run_shell(b: Block, timeout: float, env: dict) -> Result:
    t0 = time.perf_counter()
    rc, out = _bash(b.text, timeout, env)
    r = Result(b.where, b.kind, "passed", seconds=time.perf_counter() - t0)
    if rc != 0:
        r.status = "failed"
        r.reason = f"timed out after {timeout:g} s" if rc is None else f"exit status {rc}"
        r.detail = _tail(out)
    return r


def _run_console(b: Block, timeout: float, env: dict) -> Result:
    t0 = time.perf_counter()
    r = Result(b.where, b.kind, "passed")
    for offset, cmd, expected in console_commands(b.text):
        line = b.line + 1 + offset
        if not cmd:
            r.status, r.reason = "failed", f"line {line}: output before any '$ ' command"
            break
        rc, out = _bash(cmd, timeout, env, strict=False)
        if rc != 0:
            r.status = "failed"
            r.reason = f"line {line}: `{cmd}`: " + (
                f"timed out after {timeout:g} s" if rc is None else f"exit status {rc}"
            )
            r.detail = _tail(out)
            break
        if not matches(expected, out):
            r.status, r.reason = "failed", f"line {line}: `{cmd}`: output differs"
            r.detail = _tail(diff(expected, out), 80)
            break
    r.seconds = time.perf_counter() - t0
    return r


def _run_python(b: Block, timeout: float, ns: dict) -> Result:
    t0 = time.perf_counter()
    out, err = _python(b.text, b.page, b.line, ns, timeout)
    r = Result(b.where, b.kind, "passed", seconds=time.perf_counter() - t0)
    if err:
        r.status, r.reason, r.detail = "failed", err, _tail(out)
    return r


def _run_session(b: Block, timeout: float, ns: dict) -> Result:
    t0 = time.perf_counter()
    r = Result(b.where, b.kind, "passed")
    for offset, src, expected in session_examples(b.text):
        line = b.line + 1 + offset
        try:
            compile(src, b.page, "single")
            mode = "single"  # an expression's value is shown, as at the prompt
        except SyntaxError:
            mode = "exec"
        out, err = _python(src, b.page, line - 1, ns, timeout, mode)
        if err and err.startswith("timed out"):
            r.status, r.reason, r.detail = "failed", f"line {line}: {err}", _tail(out)
            break
        if not expected.strip():
            if err:
                r.status, r.reason, r.detail = "failed", f"line {line}: {err}", _tail(out)
                break
            continue
        shown = err if err else out  # an exception shows as `Name: message`
        if not matches(expected, shown):
            r.status, r.reason = "failed", f"line {line}: `{src.splitlines()[0]}`: output differs"
            r.detail = _tail(diff(expected, shown) + ("\n" + out if err else ""), 80)
            break
    r.seconds = time.perf_counter() - t0
    return r


def run_page(page: Page, scratch: Path, *, long: bool, root: bool, ci: bool, env: dict) -> list[Result]:
    """Every block of ``page``, in order, in ``scratch`` (the current directory)."""
    results: list[Result] = []
    ns: dict = {"__name__": "__main__"}
    for b in page.blocks:  # files are data the page describes, there before its first command
        if b.kind == "file" and "skip" not in b.directives:
            target = scratch / b.directives["file"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(b.text, encoding="utf-8")
    for b in page.blocks:
        kind, d = b.kind, b.directives
        if kind is None:
            continue
        timeout = float(d.get("timeout", LONG_TIMEOUT if "long" in d else DEFAULT_TIMEOUT))
        if "skip" in d:
            results.append(Result(b.where, kind, "skipped", d["skip"]))
        elif "long" in d and not long:
            results.append(Result(b.where, kind, "long", d["long"]))
        elif "root" in d and not root and not ci:
            results.append(Result(b.where, kind, "skipped", "needs root (fails instead with CI=true)"))
        elif "root" in d and not root:
            results.append(Result(b.where, kind, "failed", "needs root (namespaces, TUN), and CI=true"))
        elif "before" in d and (pre := _bash(d["before"], timeout, env))[0] != 0:
            reason = "timed out" if pre[0] is None else f"exit status {pre[0]}"
            results.append(
                Result(b.where, kind, "failed", f'before "{d["before"]}": {reason}', _tail(pre[1]))
            )
        elif kind == "file":
            results.append(Result(b.where, kind, "passed", f"wrote {d['file']}"))
        elif kind == "shell":
            results.append(_run_shell(b, timeout, env))
        elif kind == "console":
            results.append(_run_console(b, timeout, env))
        elif kind == "python":
            results.append(_run_python(b, timeout, ns))
        else:
            results.append(_run_session(b, timeout, ns))
    return results


def host(page: Page, scratch: Path, result_file: Path, *, long: bool) -> int:
    """The page process: set up its folder and namespace, run the page, write the results."""
    os.chdir(scratch)
    if os.environ.get("DOCS_CHECK_NETNS") == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    root = os.environ.get("DOCS_CHECK_ROOT") == "1"
    ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    results = run_page(page, scratch, long=long, root=root, ci=ci, env=dict(os.environ))
    import json

    result_file.write_text(json.dumps([asdict(r) for r in results]), encoding="utf-8")
    return 0
