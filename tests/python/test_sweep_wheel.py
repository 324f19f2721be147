"""The package as a user installs it: a wheel, installed into a fresh virtualenv outside the
checkout, reproducing a catalogue entry from there.

The wheel is assembled from the extension that scripts/setup already built (the package's
files, as maturin ships every file of ``python/coapcc``, and the same metadata), so the suite
builds the Rust core once. ``COAPCC_WHEEL_MATURIN=1`` (``scripts/test-long``) builds it with
``maturin build`` instead, as a release does."""

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _maturin() -> list[str]:
    exe = Path(sys.executable).with_name("maturin")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("maturin")
    if found:
        return [found]
    pytest.fail("maturin is not installed (scripts/setup installs it)")


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env.update(extra)
    return env


def _assembled_wheel(out: Path) -> Path:
    """A wheel of this checkout from the extension already built into ``python/coapcc``."""
    import coapcc

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version = coapcc.__version__
    dist = f"coapcc-{version}.dist-info"
    pkg = ROOT / "python" / "coapcc"
    files = {}
    for f in sorted(pkg.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
            files[f"coapcc/{f.relative_to(pkg).as_posix()}"] = f.read_bytes()
    assert any("_native" in n for n in files), "the extension is not built (run scripts/setup)"
    meta = ["Metadata-Version: 2.1", "Name: coapcc", f"Version: {version}"]
    meta += [f"Requires-Python: {project['requires-python']}"]
    meta += [f"Requires-Dist: {d}" for d in project["dependencies"]]
    files[f"{dist}/METADATA"] = ("\n".join(meta) + "\n").encode()
    files[f"{dist}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: coapcc-tests\nRoot-Is-Purelib: false\nTag: py3-none-any\n"
    )
    scripts = "".join(f"{k} = {v}\n" for k, v in project["scripts"].items())
    files[f"{dist}/entry_points.txt"] = f"[console_scripts]\n{scripts}".encode()
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"coapcc-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return wheel


def test_installed_wheel_reproduces_fasor18(tmp_path):
    wheels = tmp_path / "wheels"
    if os.environ.get("COAPCC_WHEEL_MATURIN") == "1":
        # The `wheel` Cargo profile shares its build cache with scripts/setup: incremental.
        r = subprocess.run(
            [*_maturin(), "build", "--out", str(wheels), "--interpreter", sys.executable],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert r.returncode == 0, r.stderr[-3000:]
    else:
        _assembled_wheel(wheels)
    (wheel,) = wheels.glob("coapcc-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        ext = [i for i in z.infolist() if "_native" in i.filename]
    assert "coapcc/experiments/anrw18.toml" in names and "coapcc/experiments/fasor18.toml" in names
    assert len(ext) == 1 and ext[0].file_size < 12 * 2**20, (ext, "debug info should be stripped")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    env = _clean_env()
    # Dependencies come from the index (pip's cache avoids downloads) or $PIP_FIND_LINKS. Offline,
    # the wheel itself is installed the same way (--no-deps) and its dependencies are borrowed
    # from this virtualenv's site-packages through a .pth line (appended to sys.path after the
    # new virtualenv's own site-packages, and without its .pth files, so the checkout's
    # editable install is not visible).
    r = subprocess.run(
        [
            str(py),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--retries",
            "0",
            "--timeout",
            "20",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    if r.returncode != 0:
        offline = any(
            s in r.stderr
            for s in (
                "NewConnectionError",
                "Could not find a version",
                "No matching distribution",
                "Temporary failure in name resolution",
                "ConnectTimeout",
            )
        )
        assert offline, r.stderr[-3000:]
        r = subprocess.run(
            [
                str(py),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--no-deps",
                "--no-index",
                str(wheel),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        import site

        (site_dir,) = (venv / "lib").glob("python3*/site-packages")
        (site_dir / "zz-borrowed-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    coapcc = str(venv / "bin" / "coapcc")
    r = subprocess.run(
        [str(py), "-c", "import coapcc, sys; print(coapcc.__file__)"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0 and str(venv) in r.stdout and str(ROOT) not in r.stdout, r
    r = subprocess.run(
        [coapcc, "reproduce", "fasor18", "--quick", "--workers", "2", "--no-progress"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    report = work / "results" / "fasor18-quick" / "report.html"
    assert report.exists() and report.stat().st_size > 10_000
    assert "440 runs, 0 done, 440 to run" in r.stderr
    # The Rust commands run from the installed package too.
    r = subprocess.run(
        [coapcc, "simulate", "--cc", "cocoa", "--clients", "3", "--seed", "1"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0 and "3 clients" in r.stdout, r
    # Dask is an extra: without it, --dask says how to get it.
    has_dask = (
        subprocess.run([str(py), "-c", "import distributed"], capture_output=True, env=env).returncode == 0
    )
    if not has_dask:
        r = subprocess.run(
            [coapcc, "sweep", "fasor18", "--quick", "--dask", "local", "--out", str(work / "d")],
            cwd=work,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert r.returncode == 2 and "pip install 'coapcc[cluster]'" in r.stderr, r.stderr
