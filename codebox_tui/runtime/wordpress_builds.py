"""WordPress builds shipped offline by the npm package ``@wp-playground/wordpress-builds``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from codebox_tui.errors import BadInputError, SandboxError
from codebox_tui.settings import NODE_BRIDGE_DIR
from codebox_tui.versions import DEFAULT_WP_VERSION

BUILDS_DIR = NODE_BRIDGE_DIR / "node_modules" / "@wp-playground" / "wordpress-builds"
DEFAULT_WP = DEFAULT_WP_VERSION


@dataclass(frozen=True)
class WordPressBuild:
    key: str  # "6.5", "beta", "nightly"
    version: str  # "6.5.5", "6.6-RC3", "nightly"
    zip_path: Path
    assets_dir: Path  # the static assets the minified zip leaves out

    @property
    def playground_url(self) -> str:
        """The URL handed to Playground; never fetched because a pre-installed site is mounted."""
        return f"http://wp.invalid/wp-{self.key}.zip"


def _builds_dir() -> Path:
    if not (BUILDS_DIR / "src" / "wordpress" / "wp-versions.json").is_file():
        raise SandboxError(
            "WordPress builds are not installed (missing @wp-playground/wordpress-builds)",
            code="wordpress-builds-missing",
            details={"hint": "run `make setup` (it runs `npm ci` in codebox_tui/runtime/node)"},
        )
    return BUILDS_DIR


def available_builds() -> dict[str, WordPressBuild]:
    root = _builds_dir()
    versions: dict[str, str] = json.loads((root / "src" / "wordpress" / "wp-versions.json").read_text())
    builds: dict[str, WordPressBuild] = {}
    for key, version in versions.items():
        zip_path = root / "src" / "wordpress" / f"wp-{key}.zip"
        if zip_path.is_file():
            builds[key] = WordPressBuild(key, version, zip_path, root / "public" / f"wp-{key}")
    return builds


def _stable_keys(builds: dict[str, WordPressBuild]) -> list[str]:
    keys = [k for k in builds if re.fullmatch(r"\d+\.\d+", k)]
    return sorted(keys, key=lambda k: tuple(int(p) for p in k.split(".")))


def resolve_build(requested: str | None) -> WordPressBuild:
    """Map ``--wp`` (``6.5``, ``6.5.5``, ``latest``, ``beta``, ``6.6-RC3``, ``nightly``) to a shipped build."""
    builds = available_builds()
    wanted = (requested or DEFAULT_WP).strip().lower()
    if wanted in ("latest", "stable"):
        wanted = _stable_keys(builds)[-1]
    if wanted in builds:
        return builds[wanted]
    for build in builds.values():
        if wanted == build.version.lower():
            return build
    match = re.fullmatch(r"(\d+\.\d+)\.\d+", wanted)
    if match and match.group(1) in builds:
        build = builds[match.group(1)]
        raise BadInputError(
            f"WordPress {requested} is not shipped; the {match.group(1)} build is {build.version}",
            code="unknown-wordpress-version",
            field="wp",
            details={"available": _describe(builds)},
        )
    raise BadInputError(
        f"WordPress {requested!r} is not available offline; available: {', '.join(_describe(builds))}",
        code="unknown-wordpress-version",
        field="wp",
        details={"available": _describe(builds)},
    )


def _describe(builds: dict[str, WordPressBuild]) -> list[str]:
    return [f"{key} ({build.version})" if key != build.version else key for key, build in builds.items()]


def newest_stable() -> str:
    """The newest numbered build shipped offline (what ``latest`` means; versions.DEFAULT_WP_VERSION names it)."""
    return _stable_keys(available_builds())[-1]


def wp_option_help() -> str:
    """``--wp``'s help: the builds this installation ships, the default marked; without them, how to get them."""
    try:
        builds = available_builds()
    except SandboxError:
        return "WordPress build (none installed yet: run `make setup`)."
    listed = [
        f"{key} ({build.version}{', default' if key == DEFAULT_WP else ''})" if key != build.version else key
        for key, build in sorted(builds.items(), key=lambda item: _order(item[0]))
    ]
    return "WordPress build shipped offline: " + ", ".join(listed) + "; or latest, or a full version."


def _order(key: str) -> tuple[int, tuple[int, ...], str]:
    """Numbered builds first, oldest to newest, then beta and nightly."""
    if re.fullmatch(r"\d+\.\d+", key):
        return 0, tuple(int(p) for p in key.split(".")), key
    return 1, (), {"beta": "0", "nightly": "1"}.get(key, key)
