"""``wordpress.bench``'s arguments (docs/bench.md): their caps and the check of a step's arguments, which a run
makes before anything boots (lifecycle/request.py, recipes). Apart from the handler (runtime/bench.py), which the
command catalog loads only when a bench runs."""

from __future__ import annotations

import re
from dataclasses import dataclass

from codebox_tui.errors import BadInputError

# Caps (docs/bench.md): a bench is evidence for a review, not a load test.
MAX_PATHS = 10
MAX_COUNT = 200
MAX_WARMUP = 50
MAX_CONCURRENCY = 8
DEFAULTS = {"count": 10, "warmup": 2, "concurrency": 1}
LIMITS = {"count": (1, MAX_COUNT), "warmup": (0, MAX_WARMUP), "concurrency": (1, MAX_CONCURRENCY)}
MAX_PATH_LENGTH = 2000
PATH_SEPARATOR = "\n"  # how a repeated argument's values reach a handler (runtime/catalog.py, parse_args)
_PATH = re.compile(r"/[\x21-\x7e]*")  # absolute, printable ASCII, no spaces (percent-encode the rest)


@dataclass(frozen=True)
class BenchSettings:
    paths: list[str]
    count: int
    warmup: int
    concurrency: int
    label: str | None = None


def bench_settings(args: dict[str, str]) -> BenchSettings:
    """The bench's arguments, checked (each error names its argument and what was expected)."""
    paths = [p for p in args.get("path", "/").split(PATH_SEPARATOR)]
    if len(paths) > MAX_PATHS:
        raise BadInputError(
            f"wordpress.bench takes at most {MAX_PATHS} path= arguments, got {len(paths)}",
            code="invalid-arg",
            field="path",
        )
    for path in paths:
        if len(path) > MAX_PATH_LENGTH or not _PATH.fullmatch(path) or path.startswith("//"):
            raise BadInputError(
                f"path={path[:100]!r}: expected a path of the site starting with '/' (printable "
                "ASCII, no spaces, no host), e.g. path=/ or path=/wp-json/",
                code="invalid-arg",
                field="path",
            )
    numbers = {name: _bounded(args, name) for name in DEFAULTS}
    label = args.get("label")
    if label is not None and not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,39}", label):
        raise BadInputError(
            f"label={label[:50]!r}: expected lower-case letters, digits, '-' and '_'", code="invalid-arg", field="label"
        )
    return BenchSettings(list(dict.fromkeys(paths)), numbers["count"], numbers["warmup"], numbers["concurrency"], label)


def _bounded(args: dict[str, str], name: str) -> int:
    low, high = LIMITS[name]
    raw = args.get(name)
    if raw is None:
        return DEFAULTS[name]
    if not re.fullmatch(r"\d{1,6}", raw) or not low <= int(raw) <= high:
        raise BadInputError(
            f"{name}={raw[:20]!r}: expected a whole number from {low} to {high}", code="invalid-arg", field=name
        )
    return int(raw)
