"""What a run wrote outside its declared mounts (docs/site-state.md, "Files written outside the declared mounts"):
a cheap listing of the sandbox's wp-content (path → type, size, mtime; no file is read) after boot and again
before capture, and the difference of the two.

The listing is sandbox output: parsed, checked and capped here. A read-write mount's changes are already in the
bundle's patch; everything else under wp-content that appears, changes or disappears was written somewhere no
reviewer sees it, so the run gets a risk flag naming the paths.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import replace
from typing import Any, Final

from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.contracts.site_state import SiteStateSummary
from codebox_tui.errors import SandboxError
from codebox_tui.runtime.backend import PhpResult, Sandbox
from codebox_tui.runtime.site_state import (  # the database is the diff's own business
    ALWAYS_SKIPPED,
    WP_CONTENT,
    state_code,
    state_result,
    summary_from,
    summary_request,
)

MAX_ENTRIES: Final = 20000

LISTING_PHP: Final = r"""<?php
$root = '%(root)s'; $skip = json_decode(base64_decode('%(skip)s'), true); $max = %(max)d;
$out = []; $stack = ['']; $cut = false;
while ($stack) {
    $rel = array_pop($stack); $dir = $rel === '' ? $root : $root . '/' . $rel;
    $names = @scandir($dir); if ($names === false) { continue; }
    foreach ($names as $name) {
        if ($name === '.' || $name === '..') { continue; }
        $path = $rel === '' ? $name : $rel . '/' . $name;
        if (in_array($path, $skip, true)) { continue; }
        if (count($out) >= $max) { $cut = true; break 2; }
        $full = $root . '/' . $path;
        if (is_link($full)) { $out[$path] = ['l', 0, 0]; continue; }
        $st = @stat($full); if ($st === false) { continue; }
        if (is_dir($full)) { $out[$path] = ['d', 0, 0]; $stack[] = $path; }
        else { $out[$path] = ['f', $st['size'], $st['mtime']]; }
    }
}
echo json_encode(['entries' => $out, 'truncated' => $cut], JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE);
"""

Listing = dict[str, tuple[str, int, int]]


def skipped_paths(mounts: list[MountSpec]) -> list[str]:
    """wp-content-relative paths never listed: the database and every mount under wp-content (read-write mounts
    are captured as the patch; read-only ones cannot be written)."""
    out = list(ALWAYS_SKIPPED)
    for mount in mounts:
        target = mount.target.rstrip("/")
        if target.startswith(WP_CONTENT + "/"):
            out.append(target[len(WP_CONTENT) + 1 :])
    return out


def _listing_code(skip: list[str]) -> str:
    encoded = base64.b64encode(json.dumps(skip).encode("utf-8")).decode("ascii")
    return LISTING_PHP % {"root": WP_CONTENT, "skip": encoded, "max": MAX_ENTRIES}


def list_content(sandbox: Sandbox, skip: list[str], *, timeout_s: float = 30.0) -> tuple[Listing, bool]:
    """wp-content's files, folders and links (path → (type, size, mtime); no file is read) and whether the
    listing was cut at MAX_ENTRIES."""
    # a probe: it loads no WordPress, so nothing the sandbox planted runs with it (docs/security.md)
    return _parsed_listing(sandbox.probe_php(_listing_code(skip), timeout_s))


def summary_and_listing(
    sandbox: Sandbox, skip: list[str], *, timeout_s: float = 60.0
) -> tuple[SiteStateSummary, tuple[Listing, bool] | SandboxError]:
    """:func:`~codebox_tui.runtime.site_state.take_summary` and :func:`list_content` from one probe process (one
    sandbox process fewer at each end of every run): the summary's JSON line first, then the listing's. The
    summary's failure raises its :class:`SandboxError` as ``take_summary`` does; the listing's is returned in its
    place, so the summary stands without it. The listing comes second so that what its size costs of the output
    cap can only cut the listing (``list_content`` alone would be cut at the same size)."""
    started = time.monotonic()
    listing = _listing_code(skip).removeprefix("<?php")
    code = f'{state_code(sandbox, summary_request())}\necho "\\n";\n(function () {{{listing}}})();\n'
    result = sandbox.probe_php(code, timeout_s)
    # json_encode writes no raw line break (one inside a string is \n): the first one ends the summary
    summary_text, _, listing_text = result.text.partition("\n")
    summary = summary_from(state_result("summary", replace(result, text=summary_text)), started)
    try:
        return summary, _parsed_listing(replace(result, text=listing_text))
    except SandboxError as error:
        return summary, error


def _parsed_listing(result: PhpResult) -> tuple[Listing, bool]:
    """The listing LISTING_PHP printed, checked entry by entry; a :class:`SandboxError` when there is none."""
    try:
        value = json.loads(result.text)
        entries = value["entries"]
        if isinstance(entries, list) and not entries:
            entries = {}  # PHP encodes an empty array as []
        if not isinstance(entries, dict) or len(entries) > MAX_ENTRIES:
            raise ValueError("entries")
    except (ValueError, KeyError, TypeError):
        detail = (result.errors or result.text).strip()[:300]
        raise SandboxError(
            f"wp-content listing: the sandbox printed no listing (exit {result.exit_code}): {detail}",
            code="site-state-failed",
        ) from None
    listing: Listing = {}
    for path, item in entries.items():
        if (
            isinstance(path, str)
            and isinstance(item, list)
            and len(item) == 3
            and item[0] in ("f", "d", "l")
            and all(isinstance(n, int) and not isinstance(n, bool) for n in item[1:])
        ):
            listing[path] = (item[0], item[1], item[2])
    return listing, bool(value.get("truncated"))


def changed_paths(before: Listing, after: Listing) -> list[dict[str, Any]]:
    """Files and links added, changed (type, size or mtime) or deleted between two listings, sorted by path. Folders
    are left out: WordPress creates empty ones on its own (``fonts/`` on the first page load), and a folder with
    something written in it shows through its files."""
    out: list[dict[str, Any]] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new or all(item is None or item[0] == "d" for item in (old, new)):
            continue
        status = "added" if old is None or old[0] == "d" else ("deleted" if new is None or new[0] == "d" else "changed")
        kept = new if status != "deleted" else old
        assert kept is not None
        entry: dict[str, Any] = {
            "path": f"{WP_CONTENT}/{path}",
            "status": status,
            "type": "file" if kept[0] == "f" else "link",
        }
        if kept[0] == "f" and status != "deleted":
            entry["bytes"] = kept[1]
        out.append(entry)
    return out
