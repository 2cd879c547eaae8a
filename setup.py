"""The native fast lane's build (coordinator/fastlane/*.pyx, Cython); everything else is in pyproject.toml.

The extension is optional: without Cython or a C compiler, or when compiling fails, the build prints ONE warning
line and goes on, and the server runs the pure-Python path (coordinator/fastlane/native.py says which path is
active; `python -m coordinator serve` logs it). Each module is compiled with the SHA-256 of the lane's sources
(.pyx and .pxd) in it, so the loader can refuse a module built from other versions of them (a checkout changed
since the last build).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
LANE = ROOT / "coordinator" / "fastlane"
SOURCES = sorted(LANE.glob("*.pyx"))
WARNING = "warning: coordinator's native fast lane was not built ({reason}); the server runs the pure-Python path"


def _warn(reason: str) -> None:
    print(WARNING.format(reason=reason.splitlines()[0] if reason else "unknown error"), file=sys.stderr)


def source_digest(folder: Path) -> str:
    """The SHA-256 of every .pyx and .pxd of the lane, by name: what coordinator/fastlane/native.py's
    `source_digest` computes (a test checks they agree)."""
    digest = hashlib.sha256()
    for path in sorted([*folder.glob("*.pyx"), *folder.glob("*.pxd")], key=lambda p: p.name):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _extensions() -> list[Extension]:
    if not SOURCES:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        _warn("Cython is not installed")
        return []
    modules = []
    macro = ("FASTLANE_SOURCE_DIGEST", f'"{source_digest(LANE)}"')
    for path in SOURCES:
        name = "coordinator.fastlane." + path.stem
        modules.append(Extension(name, [str(path.relative_to(ROOT))], define_macros=[macro],
                                 extra_compile_args=["-O2"]))
    try:
        return cythonize(modules, language_level=3, quiet=True, force=True,
                         compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True,
                                              "initializedcheck": False})
    except Exception as exc:  # a Cython error: the Python path, as without a compiler
        _warn(f"cythonize failed: {exc}")
        return []


class OptionalBuildExt(build_ext):
    """build_ext that never fails the install: a missing compiler or a compile error is one warning line. Always
    compiles (`force`): the digest macro changes with any of the lane's sources, which build_ext's timestamps of
    one module's .c file do not see."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.force = True
        self.failures: list[str] = []

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}")
        if self.failures:  # one line however many modules failed (a missing compiler fails them all)
            _warn(self.failures[0] + (f" (and {len(self.failures) - 1} more)" if len(self.failures) > 1 else ""))

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self.failures.append(f"{ext.name}: {type(exc).__name__}: {exc}")


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
