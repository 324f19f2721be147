"""The documentation check (scripts/docs_check): parsing, masking and ellipsis, how a failing
block is reported, and the catalogue listing it keeps current."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from docs_check import blocks, links, timings  # noqa: E402
from docs_check.run import run_page  # noqa: E402


def page(tmp_path, text, name="page.md"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return blocks.parse_page(p, name)


def run(tmp_path, text, **kw):
    pg = page(tmp_path, text)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    old = os.getcwd()
    os.chdir(scratch)
    try:
        env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
        return run_page(
            pg,
            scratch,
            long=kw.get("long", False),
            root=kw.get("root", True),
            ci=kw.get("ci", False),
            env=env,
        )
    finally:
        os.chdir(old)


# --------------------------------------------------------------------------- parsing


def test_kinds_markers_and_regions(tmp_path):
    pg = page(
        tmp_path,
        """\
        # Title

        ```sh
        echo one
        ```

        <!-- docs-check: skip "needs a cluster" -->

        ```console
        $ echo two
        two
        ```

        <!-- docs-check: long "a full run; minutes"; timeout 30 -->
        ```python
        x = 1
        ```

        ```python
        >>> 1 + 1
        2
        ```

        <!-- docs-check: file conf.toml -->
        ```toml
        a = 1
        ```

        ```text
        not run
        ```

        - a list item:

          ```bash
          echo indented
          ```

        <!-- docs-check: generated "echo hi" -->
        hi
        <!-- docs-check: end -->
        """,
    )
    assert not pg.errors
    kinds = [(b.line, b.kind, b.directives) for b in pg.blocks]
    assert kinds == [
        (3, "shell", {}),
        (9, "console", {"skip": "needs a cluster"}),
        (15, "python", {"long": "a full run; minutes", "timeout": "30"}),
        (19, "session", {}),
        (25, "file", {"file": "conf.toml"}),
        (29, None, {}),
        (35, "shell", {}),
    ]
    assert pg.blocks[-1].text == "echo indented\n"
    assert [(r.start, r.end, r.command, r.text) for r in pg.regions] == [(39, 41, "echo hi", "hi")]


@pytest.mark.parametrize(
    "marker, error",
    [
        ('<!-- docs-check: skipp "x" -->\n```sh\ntrue\n```\n', "unknown directive 'skipp'"),
        ("<!-- docs-check: skip -->\n```sh\ntrue\n```\n", "skip needs one quoted argument"),
        ("<!-- docs-check: timeout soon -->\n```sh\ntrue\n```\n", "timeout needs a number"),
        ("<!-- docs-check: file ../x -->\n```sh\ntrue\n```\n", "relative name"),
        ('<!-- docs-check: skip "x" -->\nsome text\n```sh\ntrue\n```\n', "must sit right above a code fence"),
        ("```sh\ntrue\n", "unclosed code fence"),
        ('<!-- docs-check: generated "x" -->\ntext\n', "without its 'end' marker"),
    ],
)
def test_bad_markers_are_errors(tmp_path, marker, error):
    pg = page(tmp_path, marker)
    assert any(error in e for e in pg.errors), pg.errors


def test_console_and_session_parsing():
    cmds = blocks.console_commands("$ echo a \\\n> b\na b\n$ true\n")
    assert cmds == [(0, "echo a \\\nb", "a b"), (3, "true", "")]
    ex = blocks.session_examples(">>> def f():\n...     return 1\n>>> f()\n1\n...\n>>> g\n")
    assert ex == [(0, "def f():\n    return 1", ""), (2, "f()", "1\n..."), (5, "g", "")]


# --------------------------------------------------------------------------- comparison


def test_masks_make_run_dependent_values_equal():
    shown = "useful downlink fraction 0.568; simulated 221.2 s in 0.002 s (118934x), 21494 events"
    actual = "useful downlink fraction 0.568; simulated 221.2 s in 0.001 s (213072x), 21494 events"
    assert blocks.matches(shown, actual)
    # ... but not the simulated values, which a run with the same seed must repeat
    assert not blocks.matches(shown, actual.replace("221.2 s", "221.3 s"))
    assert not blocks.matches(shown, actual.replace("21494", "21495"))
    assert blocks.matches('{"seed": 7, "wall_s": 0.01}', '{"seed": 7, "wall_s": 1.5e-3}')
    assert blocks.matches("sweep x: 10 runs in 1.5 s, 0 failed", "sweep x: 10 runs in 22.0 s, 0 failed")


def test_ellipsis_within_a_line_and_for_lines():
    actual = "head\nline 1\nline 2\nline 3\nP_L 0.0182 (approx 0.0165)\ntail\n"
    assert blocks.matches("head\n...\nP_L 0.0182 ...\n...", actual)
    assert blocks.matches("head\n  ...\nP_L 0.0182 (approx ...)\ntail", actual)
    assert blocks.matches("...\ntail", actual)
    assert not blocks.matches("head\n...\nP_L 0.0182 ...", actual)  # a line after it is not shown
    assert not blocks.matches("head\nline 1\nline 3\n...", actual)  # a line may not be left out


def test_blanks_and_edges_do_not_matter():
    assert blocks.matches("a  b\n\n", "\na b   \n")
    assert blocks.matches("7  default   47996", "7  default    47996")
    assert not blocks.matches("ab", "a b")


def test_diff_shows_what_differs():
    d = blocks.diff("one\ntwo\n", "one\nthree\n")
    assert "-two" in d and "+three" in d


# --------------------------------------------------------------------------- running a page


def test_a_page_runs_in_order_in_one_folder(tmp_path):
    res = run(
        tmp_path,
        """\
        <!-- docs-check: file data.txt -->
        ```text
        hello
        ```

        ```sh
        cat data.txt > copy.txt
        ```

        ```console
        $ cat copy.txt
        hello
        ```

        ```python
        text = open("copy.txt").read().strip()
        ```

        ```python
        >>> text.upper()
        'HELLO'
        >>> int("x")
        ValueError: invalid literal for int() with base 10: 'x'
        >>> print("a\\nb\\nc")
        a
        ...
        ```
        """,
    )
    assert [(r.where, r.status) for r in res] == [
        ("page.md:2", "passed"),
        ("page.md:6", "passed"),
        ("page.md:10", "passed"),
        ("page.md:15", "passed"),
        ("page.md:19", "passed"),
    ], [r.reason + r.detail for r in res]


def test_failures_are_reported_with_line_and_diff(tmp_path):
    res = run(
        tmp_path,
        """\
        ```sh
        true
        false
        ```

        ```console
        $ echo 1
        1
        $ printf 'a\\nb\\n'
        a
        c
        ```

        ```python
        >>> 1 + 1
        3
        ```

        ```python
        raise KeyError("groups")
        ```

        <!-- docs-check: timeout 1 -->
        ```sh
        sleep 30
        ```
        """,
    )
    by = {r.where: r for r in res}
    assert all(r.status == "failed" for r in res)
    assert by["page.md:1"].reason == "exit status 1"
    assert by["page.md:6"].reason == "line 9: `printf 'a\\nb\\n'`: output differs"
    assert "-c" in by["page.md:6"].detail and "+b" in by["page.md:6"].detail
    assert by["page.md:14"].reason == "line 15: `1 + 1`: output differs"
    assert by["page.md:19"].reason == "KeyError: 'groups'"
    assert 'page.md", line 20' in by["page.md:19"].detail  # the page's own line in the traceback
    assert by["page.md:24"].reason == "timed out after 1 s"


def test_a_background_server_does_not_hold_the_page(tmp_path):
    res = run(tmp_path, "```sh\nsleep 60 &\necho started\n```\n")
    assert res[0].status == "passed" and res[0].seconds < 30


def test_skip_long_root_and_before(tmp_path):
    text = """\
        <!-- docs-check: skip "no cluster here" -->
        ```sh
        false
        ```

        <!-- docs-check: long "minutes" -->
        ```sh
        echo long > long.txt
        ```

        <!-- docs-check: root -->
        ```sh
        true
        ```

        <!-- docs-check: before "echo made > made.txt" -->
        ```console
        $ cat made.txt
        made
        ```
        """
    res = run(tmp_path, text, root=False)
    assert [(r.status, r.reason) for r in res] == [
        ("skipped", "no cluster here"),
        ("long", "minutes"),
        ("skipped", "needs root (fails instead with CI=true)"),
        ("passed", ""),
    ]
    (tmp_path / "scratch").rename(tmp_path / "old")
    res = run(tmp_path, text, root=False, ci=True, long=True)
    assert [r.status for r in res] == ["skipped", "passed", "failed", "passed"]


def test_the_command_reports_a_failing_page(tmp_path):
    p = tmp_path / "bad.md"
    p.write_text("Intro.\n\n```console\n$ echo 42\n41\n```\n")
    out = subprocess.run(
        [sys.executable, "-m", "docs_check", str(p)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT / "scripts")),
        timeout=120,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"FAILED {p}:3 [console]: line 4: `echo 42`: output differs" in out.stdout
    assert "-41" in out.stdout and "+42" in out.stdout
    assert "docs-check: 0 passed, 1 failed" in out.stdout


# --------------------------------------------------------------------------- timings


def test_timing_claims_must_come_from_benchmarks(tmp_path):
    (tmp_path / "BENCHMARKS.md").write_text(
        "| What | Figure | Command | Date | Machine |\n|---|---|---|---|---|\n"
        "| reference run | 9.27 ms; simulated 2 463.6 s | `x` | 2026-11-24 | VM2 |\n"
    )
    text = (
        "The reference run simulated 2 463.6 s in 9.27 ms (2026-11-24, measured).\n\n"
        "It took 11.3 ms on 2026-11-24.\n\n"
        "It took 9.27 ms on 2026-11-23.\n\n"
        "A 3-hour run, 2026-11-24, no measurement word here: 10 s.\n"
    )
    (tmp_path / "page.md").write_text(text)
    res = timings.check_timings(tmp_path, ["page.md"])
    assert [(r.where, r.status) for r in res] == [
        ("page.md:1", "passed"),
        ("page.md:3", "failed"),
        ("page.md:5", "failed"),
    ]
    assert "11.3ms" in res[1].reason


# --------------------------------------------------------------------------- links


def test_links_lead_to_files_and_headings(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Simulator: reference run\n")
    (tmp_path / "page.md").write_text(
        "# Page\n\n[a](other.md#simulator-reference-run) [b](#page) [c](https://example.org/x)\n"
        "[d](other.md#nope) [e](gone.md)\n\n```sh\necho [f](gone2.md)\n```\n"
    )
    res = links.check_links(tmp_path, ["page.md"])
    assert [(r.where, r.reason) for r in res] == [
        ("page.md:4", "link to other.md#nope: no heading #nope there"),
        ("page.md:4", "link to gone.md: no such file"),
    ]


# --------------------------------------------------------------------------- the catalogue listing


def test_the_catalogue_is_listed_whole_with_its_runs():
    from coapcc.experiment import catalogue, load_experiment
    from coapcc.listing import catalogue_markdown, catalogue_rows
    from coapcc.sweeper import plan

    rows = {r["name"]: r for r in catalogue_rows()}
    assert set(rows) == set(catalogue()) >= {"anrw18", "makarem21", "sensitivity"}
    anrw18 = load_experiment(catalogue()["anrw18"])
    assert rows["anrw18"]["runs"] == f"{len(plan(anrw18)):,}".replace(",", " ") == "7 360"
    assert rows["anrw18"]["quick"] == "1 104"
    # every entry is an experiment file of a registered kind, its runs planned the same way
    assert rows["ancillotti"]["kind"] == "mesh" and rows["anrw18"]["kind"] == "sim"
    assert rows["makarem21"]["kind"] == "makarem-studies"
    makarem = load_experiment(catalogue()["makarem21"])
    assert rows["makarem21"]["quick"] == f"{len(plan(makarem.quick_variant())):,}".replace(",", " ")
    table = catalogue_markdown().splitlines()
    assert table[0].startswith("| Entry |") and len(table) == 2 + len(rows)


def test_the_catalogue_page_holds_the_listing():
    pg = blocks.parse_page(ROOT / "experiments" / "README.md", "experiments/README.md")
    (region,) = pg.regions
    assert region.command == "coapcc reproduce --catalogue"
    from coapcc.listing import catalogue_markdown

    assert blocks._normalise(region.text) == blocks._normalise(catalogue_markdown())
