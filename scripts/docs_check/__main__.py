"""``scripts/docs-check [PAGE...] [--long] [--list] [--update] [-j N] [--keep]``

Runs the shell, console and Python blocks of README.md, DEVELOPERS.md, experiments/README.md and
docs/*.md (see ``blocks.py`` for the convention; docs/docs-check.md for the user's view), checks
the generated regions, the timings the pages quote (``timings.py``) and the relative links
between them (``links.py``). Each page runs in its own scratch folder (a temporary directory,
removed afterwards unless ``--keep``) and, where the system allows, its own network namespace;
independent pages run in parallel. Exit status 0 when every block passes, 1 when one fails,
2 on bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .blocks import Page, parse_page
from .links import check_links
from .run import Result, host
from .timings import check_timings

REPO = Path(__file__).resolve().parents[2]
#: A page's whole run (with --long: LONG_PAGE_TIMEOUT); a block has its own timeout
#: (run.py), this only bounds a stuck page.
PAGE_TIMEOUT = 900.0
LONG_PAGE_TIMEOUT = 6 * 3600.0


def default_pages(repo: Path) -> list[str]:
    pages = ["README.md", "DEVELOPERS.md", "experiments/README.md"]
    pages += sorted(str(p.relative_to(repo)) for p in (repo / "docs").glob("*.md"))
    return [p for p in pages if (repo / p).is_file()]


def _page_name(arg: str) -> str:
    """A page as given on the command line -> its path relative to the checkout (absolute
    when it lies outside, as the runner's own tests' pages do)."""
    path = Path(arg).resolve()
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def _netns_prefix() -> list[str]:
    """How to give a page a network namespace of its own: as root, `unshare --net`; else an
    unprivileged user namespace if the kernel allows it; else none (pages share the host's)."""
    if not shutil.which("unshare") or not shutil.which("ip"):
        return []
    for prefix in (["unshare", "--net"], ["unshare", "--user", "--map-root-user", "--net"]):
        if prefix[1] == "--net" and os.geteuid() != 0:
            continue
        ok = subprocess.run([*prefix, "ip", "link", "set", "lo", "up"], capture_output=True).returncode == 0
        if ok:
            return prefix
    return []


def page_env(repo: Path) -> dict:
    env = dict(os.environ)
    venv = repo / ".venv" / "bin"
    env["PATH"] = f"{venv}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(repo / ".venv")
    env["CARGO_TARGET_DIR"] = env.get("CARGO_TARGET_DIR", str(repo / "target"))
    env["DOCS_CHECK_REPO"] = str(repo)
    env["MPLBACKEND"] = "Agg"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    env["TERM"] = "dumb"
    env["COLUMNS"] = "100"
    env.pop("COAPCC_EXPERIMENTS", None)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)  # this package, for --host
    return env


def run_one(page: Page, args, tmp: Path, netns: list[str]) -> tuple[list[Result], float, str]:
    """Run ``page`` in a process of its own; its results, wall time and the process's log."""
    t0 = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix=page.path.replace("/", "_") + "-", dir=tmp))
    for name in (".venv", "target"):  # as in a checkout, for `.venv/bin/...` and `target/...`
        if (REPO / name).exists():
            (scratch / name).symlink_to(REPO / name)
    result_file = tmp / (scratch.name + ".json")
    log = tmp / (scratch.name + ".log")
    env = page_env(REPO)
    env["DOCS_CHECK_NETNS"] = "1" if netns else "0"
    env["DOCS_CHECK_ROOT"] = "1" if os.geteuid() == 0 else "0"
    cmd = [*netns, sys.executable, "-m", "docs_check", "--host", page.path, "--scratch", str(scratch)]
    cmd += ["--result", str(result_file)] + (["--long"] if args.long else [])
    with open(log, "w") as out:
        p = subprocess.Popen(
            cmd, cwd=scratch, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(LONG_PAGE_TIMEOUT if args.long else PAGE_TIMEOUT)
        _kill_group(p.pid)
        p.wait()
    text = log.read_text(errors="replace")
    if result_file.exists():
        results = [Result(**r) for r in json.loads(result_file.read_text())]
    else:
        results = [
            Result(
                page.path,
                "page",
                "failed",
                f"the page's process ended without results ({p.returncode})",
                text[-4000:],
            )
        ]
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    return results, time.perf_counter() - t0, text


def _kill_group(pgid: int) -> None:
    """End what a page left running (background servers): TERM, then KILL after 3 s."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def check_regions(pages: list[Page], update: bool) -> list[Result]:
    """Generated regions: the text between the markers must be the command's output."""
    from .blocks import _normalise
    from .run import _bash

    out = []
    env = page_env(REPO)
    for page in pages:
        for reg in page.regions:
            with tempfile.TemporaryDirectory() as d:
                rc, text = _bash(f"cd {d}\n{reg.command}", 120.0, env)
            where = f"{reg.page}:{reg.start}"
            if rc != 0:
                out.append(
                    Result(where, "generated", "failed", f"`{reg.command}`: exit status {rc}", text[-3000:])
                )
            elif _normalise(text) == _normalise(reg.text):
                out.append(Result(where, "generated", "passed"))
            elif update:
                path = REPO / reg.page
                lines = path.read_text().splitlines()
                lines[reg.start : reg.end - 1] = _normalise(text)
                path.write_text("\n".join(lines) + "\n")
                out.append(Result(where, "generated", "passed", "updated"))
            else:
                import difflib

                d = "\n".join(
                    difflib.unified_diff(_normalise(reg.text), _normalise(text), "page", "now", lineterm="")
                )
                out.append(
                    Result(
                        where,
                        "generated",
                        "failed",
                        f"out of date: run scripts/docs-check --update ({reg.command})",
                        d,
                    )
                )
    return out


def report(results: list[Result], stream=sys.stdout) -> int:
    failed = [r for r in results if r.status == "failed"]
    for r in failed:
        print(f"\nFAILED {r.where} [{r.kind}]: {r.reason}", file=stream)
        if r.detail:
            print("    " + r.detail.replace("\n", "\n    "), file=stream)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/docs-check", description=__doc__.split("\n\n")[0])
    p.add_argument("pages", nargs="*", help="pages to check (default: every page)")
    p.add_argument("--long", action="store_true", help="also run the blocks marked long")
    p.add_argument("--list", action="store_true", help="list every block and what the check does with it")
    p.add_argument("--update", action="store_true", help="rewrite out-of-date generated regions")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="pages run at once")
    p.add_argument("--keep", action="store_true", help="keep the pages' scratch folders")
    p.add_argument("-v", "--verbose", action="store_true", help="print every block's result and time")
    p.add_argument("--host", help=argparse.SUPPRESS)
    p.add_argument("--scratch", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.host:
        return host(
            parse_page(REPO / args.host, args.host), Path(args.scratch), Path(args.result), long=args.long
        )
    if args.jobs < 1:
        p.error("--jobs must be >= 1")
    names = [_page_name(n) for n in args.pages] or default_pages(REPO)
    for n in names:
        if not (REPO / n).is_file():
            p.error(f"no such page: {n}")
    pages = [parse_page(REPO / n, n) for n in names]
    if args.list:
        return list_blocks(pages, args.long)

    t0 = time.perf_counter()
    results: list[Result] = [
        Result(e.split(": ", 1)[0], "marker", "failed", e.split(": ", 1)[-1])
        for pg in pages
        for e in pg.errors
    ]
    results += check_regions(pages, args.update)
    if not args.pages:
        results += check_timings(REPO)
    results += check_links(REPO, [pg.path for pg in pages] + (["BENCHMARKS.md"] if not args.pages else []))
    runnable = [pg for pg in pages if not pg.skip and any(b.kind for b in pg.blocks)]
    # Longest pages first (a rough guess: the number of blocks that run), so the pool ends together.
    runnable.sort(key=lambda pg: -sum(1 for b in pg.blocks if b.kind and not b.directives))
    netns = _netns_prefix()
    if not netns:
        print(
            "docs-check: no network namespace per page available; pages share the host's ports",
            file=sys.stderr,
        )
    with tempfile.TemporaryDirectory(prefix="docs-check-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        futures = {pg.path: pool.submit(run_one, pg, args, Path(tmp), netns) for pg in runnable}
        for pg in pages:
            if pg.skip:
                print(f"{pg.path}: skipped ({pg.skip})")
                continue
            if pg.path not in futures:
                continue
            res, seconds, _ = futures[pg.path].result()
            results += res
            counts = {
                s: sum(1 for r in res if r.status == s) for s in ("passed", "failed", "skipped", "long")
            }
            print(
                f"{pg.path}: {', '.join(f'{v} {k}' for k, v in counts.items() if v) or 'nothing to run'} ({seconds:.1f} s)",
                flush=True,
            )
            if args.verbose:
                for r in res:
                    print(f"    {r.where:32} {r.kind:8} {r.status:8} {r.seconds:6.1f} s  {r.reason}")
    status = report(results)
    n = {s: sum(1 for r in results if r.status == s) for s in ("passed", "failed", "skipped", "long")}
    print(
        f"\ndocs-check: {n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped, "
        f"{n['long']} long (not run; --long runs them) in {time.perf_counter() - t0:.1f} s"
    )
    return status


def list_blocks(pages: list[Page], long: bool) -> int:
    for pg in pages:
        for e in pg.errors:
            print(f"{e} (marker error)")
        if pg.skip:
            print(f"{pg.path}: page skipped: {pg.skip}")
            continue
        for b in pg.blocks:
            if b.kind is None:
                continue
            d = b.directives
            what = (
                f"skip: {d['skip']}"
                if "skip" in d
                else f"long: {d['long']}"
                if "long" in d and not long
                else {
                    "shell": "run, exit 0",
                    "console": "run, output compared",
                    "python": "run, no exception",
                    "session": "run, outputs compared",
                    "file": f"written to {d.get('file')}",
                }[b.kind]
            )
            if "root" in d:
                what += " (needs root)"
            print(f"{b.where:32} {b.lang or '-':8} {what}")
        for reg in pg.regions:
            print(f"{pg.path}:{reg.start:<{31 - len(pg.path)}} {'region':8} generated by `{reg.command}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
