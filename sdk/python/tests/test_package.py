"""The client as a package: a fresh virtual environment installs it from the repository offline
(`pip install --no-index --no-build-isolation`, Debian's python3-venv and python3-setuptools), the
example runs against the installed copy from outside the repository, and the package type-checks
with `mypy --strict` (Debian's python3-mypy), its `py.typed` marker installed with it."""

from __future__ import annotations

import os
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

SDK = Path(__file__).resolve().parents[1]


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout


def test_a_fresh_virtual_environment_installs_the_package_and_runs_the_example(database_url: str, tmp_path: Path) -> None:
    if subprocess.run([sys.executable, "-c", "import ensurepip, setuptools"], capture_output=True).returncode != 0:
        pytest.fail("needs Debian's python3-venv and python3-setuptools (apt-get install python3-venv python3-setuptools)")
    # A copy, so that the build leaves nothing in the repository; system site packages for psycopg.
    src = tmp_path / "src"
    shutil.copytree(SDK, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
    run(sys.executable, "-m", "venv", "--system-site-packages", tmp_path / "env", cwd=tmp_path)
    python = tmp_path / "env" / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", src, cwd=tmp_path)

    installed = run(python, "-c", "import workhorse, pathlib; p = pathlib.Path(workhorse.__file__).parent; "
                    "print(p); print((p / 'py.typed').exists())", cwd=tmp_path).split()  # fmt: skip
    assert installed == [str(tmp_path / "env" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
                             / "site-packages" / "workhorse"), "True"]  # fmt: skip

    # The example, from a folder of its own: it finds workhorse only in the environment.
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(SDK / "examples" / "invoice.py", app / "invoice.py")
    out = run(python, app / "invoice.py", cwd=app, env={**os.environ, "DATABASE_URL": database_url})
    assert "accepted job" in out.splitlines()[0], out


def test_the_package_type_checks_strictly(tmp_path: Path) -> None:
    if subprocess.run([sys.executable, "-c", "import mypy"], capture_output=True).returncode != 0:
        pytest.fail("needs Debian's python3-mypy (apt-get install python3-mypy)")
    out = run(sys.executable, "-m", "mypy", "--strict", "--cache-dir", tmp_path / "mypy", SDK / "workhorse", cwd=SDK)
    assert "Success" in out, out


def test_installing_from_the_checkout_leaves_nothing_for_git(tmp_path: Path) -> None:
    """docs/clients.md's install, from the checkout's own sdk/python: what the build writes there
    (build/, workhorse.egg-info/) is ignored, so `git status` stays clean."""
    repo = SDK.parents[1]
    if not (repo / ".git").exists():
        pytest.fail("needs the git checkout the docs install from")
    run(sys.executable, "-m", "venv", "--system-site-packages", tmp_path / "env", cwd=tmp_path)
    run(tmp_path / "env" / "bin" / "python", "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", SDK, cwd=tmp_path)
    assert (SDK / "build").exists() or list(SDK.glob("*.egg-info")), "the build wrote nothing in the source tree"
    after = run("git", "status", "--porcelain", "--untracked-files=all", "--", SDK, cwd=repo)
    left = [line for line in after.splitlines() if "/build/" in line or ".egg-info" in line]
    assert not left, "the install left files git does not ignore:\n" + "\n".join(left)
