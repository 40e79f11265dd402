"""The `wp` read-only allow-list of `codebox exec` is data (docs/exec.md, "wp"): versioned, checked here,
and read by the sidecar's classifier, which is run for real (Node) to classify each entry."""

from __future__ import annotations

import json
import subprocess

import pytest

from codebox_tui.errors import BadInputError
from codebox_tui.runtime.exec import parse_capabilities
from codebox_tui.settings import NODE_BRIDGE_DIR

ALLOWLIST = NODE_BRIDGE_DIR / "wp-readonly-commands.json"
# Verbs that change a site: none may appear in a read-only entry.
WRITE_VERBS = {
    "add",
    "update",
    "set",
    "delete",
    "create",
    "remove",
    "activate",
    "deactivate",
    "install",
    "uninstall",
    "import",
    "generate",
    "flush",
    "reset",
    "regenerate",
    "edit",
    "patch",
    "spam",
    "trash",
    "approve",
    "unapprove",
    "enable",
    "disable",
    "toggle",
    "run",
    "replace",
    "search-replace",
    "eval",
    "eval-file",
    "shell",
    "db",
    "scaffold",
    "upgrade",
    "update-db",
    "rewrite",
    "empty",
    "clean",
    "recount",
    "assign",
    "migrate",
    "switch-language",
    "download",
    "add-cap",
    "remove-cap",
    "increment",
    "decrement",
    "destroy",
    "tag",
    "untag",
}


def load() -> dict:  # type: ignore[type-arg]
    return json.loads(ALLOWLIST.read_text())


def test_allowlist_is_versioned_and_well_formed() -> None:
    doc = load()
    assert doc["schema"] == "codebox/wp-readonly-commands/v1"
    assert isinstance(doc["version"], int) and doc["version"] >= 1
    entries = doc["commands"]
    assert len(entries) == len(set(entries)), "duplicate entries"
    for entry in entries:
        words = entry.split(" ")
        assert all(w and w == w.lower() and not w.startswith("-") for w in words), entry
        assert not (set(words[1:]) & WRITE_VERBS), f"{entry!r} names a write verb"
    assert {"option get", "post list", "core version"} <= set(entries)
    assert "option update" not in entries and "eval" not in entries


def test_the_classifier_reads_the_allowlist() -> None:
    entries = load()["commands"]
    probes = [f"wp {e} x" for e in entries] + [
        "wp option update a b",
        "wp plugin activate x",
        "wp eval 1",
        "wp cron event run --due-now",
    ]
    script = (
        "import { classifyScript } from './classify.mjs';"
        "const out = JSON.parse(process.argv[1]).map((c) => classifyScript(c).classification);"
        "process.stdout.write(JSON.stringify(out));"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script, json.dumps(probes)],
        cwd=NODE_BRIDGE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = json.loads(done.stdout)
    assert got[: len(entries)] == ["read_only"] * len(entries)
    assert got[len(entries) :] == ["sandbox_write", "sandbox_write", "eval", "sandbox_write"]


def test_capabilities_parse_with_read_always_in_force() -> None:
    assert parse_capabilities("write") == ["read", "write"]
    assert parse_capabilities("execute_eval, read") == ["read", "eval"]
    assert parse_capabilities("") == ["read"]
    with pytest.raises(BadInputError) as caught:
        parse_capabilities("read,root")
    assert caught.value.field == "--capabilities" and "'root'" in caught.value.message
