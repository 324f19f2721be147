"""The experiment-level commands: coapcc sweep, report, reproduce."""

import subprocess

import coapcc
from conftest import COAPCC, subprocess_env


def run(*args, env=None, check=True, cwd=None):
    r = subprocess.run(
        [*COAPCC, *map(str, args)],
        capture_output=True,
        text=True,
        env=env or subprocess_env(),
        cwd=cwd,
        timeout=300,
    )
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_help_lists_python_commands():
    out = run("--help").stdout
    for cmd in ("sweep", "report", "reproduce", "algorithms"):
        assert f"  {cmd} " in out
    assert "experiment file" in run("sweep", "--help").stdout


def test_sweep_list_and_errors(tiny_file):
    out = run("sweep", tiny_file, "--list").stdout
    assert out.startswith("tiny: 17 runs") and "mixed: groups[1] x 1 replications = 1 runs" in out
    r = run("sweep", "no-such-experiment", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "valid: " in r.stderr and "anrw18" in r.stderr
    tiny_file.write_text(tiny_file.read_text().replace('"cocoa"', '"reno"'))
    r = run("sweep", tiny_file, "--out", tiny_file.parent / "x", check=False)
    assert r.returncode == 2 and "unknown algorithm 'reno'" in r.stderr


def test_sweep_report_reproduce_by_name(tiny_file, tmp_path):
    env = subprocess_env(COAPCC_EXPERIMENTS=tiny_file.parent)
    # By name, default output folder results/NAME under the working directory.
    r = run("sweep", "tiny", "--workers", "2", env=env, cwd=tmp_path)
    assert "17 runs, 0 done, 17 to run (process pool, 2 workers)" in r.stderr
    # The progress bar counts runs.
    assert "17 runs in" in r.stderr and "tiny: 100%|" in r.stderr and "| 17/17 runs" in r.stderr
    res = coapcc.load_results(tmp_path / "results" / "tiny")
    assert len(res.runs) == 17
    r = run("report", tmp_path / "results" / "tiny", "--no-trace", env=env)
    html_path = tmp_path / "results" / "tiny" / "report.html"
    assert r.stdout.strip() == str(html_path) and html_path.stat().st_size > 10_000
    # reproduce --quick: its own dataset, sweep + report with the traced run.
    r = run("reproduce", "tiny", "--quick", "--workers", "2", "--no-progress", env=env, cwd=tmp_path)
    assert "5 runs, 0 done, 5 to run" in r.stderr and "tracing run" in r.stderr
    assert (tmp_path / "results" / "tiny-quick" / "report.html").exists()
    assert (tmp_path / "results" / "tiny-quick" / "figures" / "trace.png").exists()
    # The quick runs are the first replications of the full grid's points: same seeds.
    quick = coapcc.load_results(tmp_path / "results" / "tiny-quick").runs
    assert set(quick["config_hash"]) <= set(res.runs["config_hash"])
