"""Split a patch into the files that are tests and the files that are code (docs/evaluate-patch.md,
"Which files are tests").

The default rule: a path with a ``tests`` or ``test`` folder in it, a file named ``test-*.php``, ``*-test.php``
or ``*Test.php``, or a path under a ``<directory>`` / ``<file>`` named in the ``<testsuites>`` of the plugin's
``phpunit.xml`` (else ``phpunit.xml.dist``). ``--tests-path GLOB`` (repeatable) replaces the rule: a path is a
test when it matches one of the globs (``fnmatch``; ``*`` also matches ``/``).

The patch is cut into its per-file sections as bytes (binary patches stay intact); a section belongs to the
tests when every path it names is a test path.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from codebox_tui.errors import BadInputError

DEFAULT_RULE = "default"
TEST_FOLDERS = frozenset({"tests", "test"})
TEST_NAMES = ("test-*.php", "*-test.php", "*Test.php")
MAX_PHPUNIT_XML_BYTES = 1_000_000

_GIT_HEADER = re.compile(rb"^diff --git ", re.MULTILINE)
_PATH_LINES = re.compile(rb"^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.+?)\r?$", re.MULTILINE)


@dataclass
class TestRule:
    """Which plugin-relative paths are tests: the default rule with the phpunit.xml directories, or globs."""

    __test__ = False  # not a pytest test class

    globs: list[str] = field(default_factory=list)
    suite_dirs: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "--tests-path" if self.globs else DEFAULT_RULE

    def is_test(self, path: str) -> bool:
        if self.globs:
            return any(fnmatchcase(path, glob) for glob in self.globs)
        parts = PurePosixPath(path).parts
        if any(part in TEST_FOLDERS for part in parts[:-1]):
            return True
        if parts and any(fnmatchcase(parts[-1], name) for name in TEST_NAMES):
            return True
        return any(path == d or path.startswith(d.rstrip("/") + "/") for d in self.suite_dirs)


def test_rule(plugin_dir: Path, globs: list[str] | None = None) -> TestRule:
    """The rule for one plugin: ``globs`` when given, else the default with its phpunit.xml's test directories."""
    if globs:
        for glob in globs:
            if not glob.strip() or glob.startswith("/"):
                raise BadInputError(
                    f"--tests-path {glob!r}: expected a glob relative to the plugin folder (e.g. 'spec/*')",
                    code="invalid-arg",
                    field="--tests-path",
                )
        return TestRule(globs=list(globs))
    return TestRule(suite_dirs=_suite_dirs(plugin_dir))


def _suite_dirs(plugin_dir: Path) -> list[str]:
    for name in ("phpunit.xml", "phpunit.xml.dist"):
        config = plugin_dir / name
        if config.is_file() and not config.is_symlink():
            data = config.read_bytes()[:MAX_PHPUNIT_XML_BYTES]
            if b"<!ENTITY" in data or b"<!DOCTYPE" in data:
                return []  # entity definitions are never expanded; such a file names no directory here
            try:
                root = ET.fromstring(data)
            except ET.ParseError:
                return []
            found = []
            for element in root.iterfind("./testsuites/testsuite/*"):
                if element.tag in ("directory", "file") and element.text and element.text.strip():
                    rel = element.text.strip().removeprefix("./").rstrip("/")
                    if rel and rel not in (".", "") and not rel.startswith(("/", "..")):
                        found.append(rel)
            return found
    return []


@dataclass
class SplitPatch:
    test_patch: bytes
    code_patch: bytes
    test_files: list[str]
    code_files: list[str]


def _sections(patch: bytes) -> list[bytes]:
    starts = [m.start() for m in _GIT_HEADER.finditer(patch)]
    if not starts:  # a plain unified diff: a section starts at each "--- " line followed by "+++ "
        starts = [m.start() for m in re.finditer(rb"^--- .*\r?\n\+\+\+ ", patch, re.MULTILINE)]
    if not starts:
        return [patch] if patch.strip() else []
    # a preamble before the first file (a mail's headers) is no file's change and is left out
    return [patch[a:b] for a, b in zip(starts, [*starts[1:], len(patch)], strict=True)]


def _paths(section: bytes) -> list[str]:
    out: list[str] = []
    for match in _PATH_LINES.finditer(section):
        raw = match.group(1).split(b"\t")[0].decode("utf-8", errors="replace").strip('"')
        if raw == "/dev/null":
            continue
        line = match.group(0)
        if line.startswith((b"--- ", b"+++ ")):  # -p1, as git apply strips it
            raw = raw.split("/", 1)[1] if "/" in raw else raw
        if raw not in out:
            out.append(raw)
    if not out and section.startswith(b"diff --git "):
        header = section.split(b"\n", 1)[0].decode("utf-8", errors="replace")[len("diff --git ") :]
        half = header.split(" b/", 1)
        if len(half) == 2 and half[0].startswith("a/"):
            out.append(half[1])
    return out


def split_patch(patch: bytes, rule: TestRule) -> SplitPatch:
    """The patch's test sections and code sections, each still a patch ``git apply`` takes."""
    tests, code = bytearray(), bytearray()
    test_files: list[str] = []
    code_files: list[str] = []
    for section in _sections(patch):
        paths = _paths(section)
        if paths and all(rule.is_test(p) for p in paths):
            tests += section
            test_files += [p for p in paths if p not in test_files]
        else:
            code += section
            code_files += [p for p in paths if p not in code_files]
    return SplitPatch(bytes(tests), bytes(code), test_files, code_files)
