"""Build hook: the wheel carries the repository's evaluate modules, Spaces and dataset cards in
``styleeval/_bundled/``, so that ``pip install styleeval`` does what the README shows (``styleeval.bundled`` finds
them there, or in a source checkout). Everything else is declared in pyproject.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUNDLED = {  # repository folder -> the files of each of its entries that a user needs (the canonical layout)
    "metrics": ("*.py", "README.md", "requirements.txt"),  # metrics/<name>/<name>.py, app.py, its card
    "spaces": ("*.py", "README.md", "requirements.txt"),
    "datasets": ("README.md",),  # the cards; never the data built beside them
}


class BuildWithBundle(build_py):
    """``build_py``, then the folders of :data:`BUNDLED` copied into ``styleeval/_bundled/`` of the build (not for
    an editable install: it runs from the checkout, where ``styleeval.bundled`` finds the folders themselves)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib, "styleeval", "_bundled")
        shutil.rmtree(target, ignore_errors=True)  # nothing left from an earlier build
        for kind, patterns in BUNDLED.items():
            for entry in sorted(p for p in (ROOT / kind).iterdir() if p.is_dir() and not p.name.startswith(".")):
                for pattern in patterns:
                    for path in sorted(entry.glob(pattern)):
                        self.mkpath(str(target / kind / entry.name))
                        self.copy_file(str(path), str(target / kind / entry.name / path.name))


setup(cmdclass={"build_py": BuildWithBundle})
