"""The worker daemon drops a zip from the search path only where it is the installed PySpark's own
(streaming.job.python_daemon): pip's PySpark with its compiled modules beside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streaming.job.python_daemon import installed_zips


def _site(root: Path, py4j_version: str = "0.10.9.9") -> tuple[Path, list[str]]:
    site = root / "site-packages"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    (site / f"py4j-{py4j_version}.dist-info").mkdir()
    zips = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip")]
    return site, zips


def test_the_installed_packages_zips_go(tmp_path):
    site, zips = _site(tmp_path)
    assert installed_zips(["", *zips, "/usr/lib/python3.11", str(site)]) == zips


def test_a_link_to_site_packages_is_the_same_place(tmp_path):
    site, zips = _site(tmp_path)
    (tmp_path / "venv").symlink_to(site)
    linked = [z.replace(str(site), str(tmp_path / "venv")) for z in zips]
    assert installed_zips([*linked, str(site)]) == linked


@pytest.mark.parametrize("case", ["other spark home", "site not after the zips", "other py4j",
                                  "no package"])
def test_any_other_zip_stays(tmp_path, case):
    site, zips = _site(tmp_path, "0.10.9.7" if case == "other py4j" else "0.10.9.9")
    if case == "other spark home":
        home = tmp_path / "opt" / "spark" / "python" / "lib"
        home.mkdir(parents=True)
        zips = [str(home / "pyspark.zip"), str(home / "py4j-0.10.9.9-src.zip")]
    if case == "no package":
        (site / "pyspark" / "__init__.py").unlink()
    path = [str(site), *zips] if case == "site not after the zips" else [*zips, str(site)]
    kept = installed_zips(path)
    assert kept == ([zips[0]] if case == "other py4j" else []), kept


def test_the_daemon_imports_pyspark_compiled_from_the_package():
    # Spark's own PYTHONPATH for a worker daemon: the zips first
    import pyspark

    lib = Path(pyspark.__file__).parent / "python" / "lib"
    zips = sorted(str(z) for z in lib.glob("*.zip"))
    assert len(zips) == 2, zips
    probe = ("from streaming.job.python_daemon import drop_installed_zips; drop_installed_zips(); "
             "import pyspark, py4j; print(pyspark.__file__); print(py4j.__file__)")
    env = {"PYTHONPATH": ":".join([*zips, str(Path(__file__).parents[4])])}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, timeout=60, check=True).stdout.split()
    assert all(".zip" not in f and f.endswith("__init__.py") for f in out), out
