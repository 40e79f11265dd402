"""Dead-code check for ``make lint``: functions, methods, classes, properties and imports that nothing in the
repository uses, and code after a ``return``/``raise``, found by vulture (a static scan, nothing is imported).

Names used only by a framework (Textual's ``compose``/``on_*``/``action_*``, Typer commands registered by
decorator, pydantic validators, pytest fixtures) are not dead: the patterns below and the names in
``scripts/dead_code_whitelist.py`` say so. Unused variables and attributes are not reported (pydantic and
dataclass fields are read by serialisation, which a static scan cannot see). Exit 1 with one line per finding.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vulture import Vulture

REPO = Path(__file__).resolve().parents[1]
# The shipped code is checked; tests, benchmarks and scripts are scanned too, as users of it.
CHECKED = ("codebox_tui", "store", "widgets")
USERS = ("tests", "bench", "scripts")
EXCLUDE = ["codebox_tui/runtime/node", "__snapshots__"]
KINDS = {"function", "method", "class", "property", "import", "unreachable_code"}
FRAMEWORK_NAMES = [
    "compose",
    "on_*",
    "_on_*",
    "action_*",
    "watch_*",
    "validate_*",
    "compute_*",
    "render",
    "render_line",
    "get_content_width",
    "get_content_height",
    "check_action",
    "key_*",
    "do_GET",
    "do_POST",
    "do_HEAD",
    "log_message",
    "pytest_*",
    "test_*",
]
FRAMEWORK_DECORATORS = [
    "@*.command",
    "@*.callback",
    "@field_validator",
    "@model_validator",
    "@field_serializer",
    "@model_serializer",
    "@computed_field",
    "@pytest.fixture",
    "@*.fixture",
    "@*.tool",
    "@on",
    "@work",
    "@given",
    "@st.composite",
    "@*.setter",
]


def dead_code() -> list[str]:
    scan = Vulture(ignore_names=FRAMEWORK_NAMES, ignore_decorators=FRAMEWORK_DECORATORS)
    paths = [str(REPO / p) for p in (*CHECKED, *USERS) if (REPO / p).exists()]
    scan.scavenge([*paths, str(REPO / "scripts" / "dead_code_whitelist.py")], exclude=EXCLUDE)
    checked = tuple(str(REPO / p) + "/" for p in CHECKED)
    return [
        item.get_report()
        for item in scan.get_unused_code(min_confidence=60)
        if item.typ in KINDS and str(item.filename).startswith(checked)
    ]


def main() -> int:
    found = dead_code()
    for line in found:
        print(line)
    if found:
        print(
            f"{len(found)} unused name(s): delete them, or name the framework that calls them in "
            "scripts/dead_code_whitelist.py",
            file=sys.stderr,
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
