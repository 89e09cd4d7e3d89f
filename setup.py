"""Build hook: ship ``conf/`` (the one source of truth) inside the wheel as the package data
``streaming/_conf``.

Everything else about the build is in pyproject.toml. An editable install needs no copy: from a
checkout, ``streaming.paths`` reads ``conf/`` directly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONF = Path(__file__).resolve().parent / "conf"
SHIPPED = ("*.toml", "*.properties", "maven/**/*.xml")


class BuildPyWithConf(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "streaming" / "_conf"
        shutil.rmtree(target, ignore_errors=True)
        for pattern in SHIPPED:
            for src in CONF.glob(pattern):
                dst = target / src.relative_to(CONF)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)


setup(cmdclass={"build_py": BuildPyWithConf})
