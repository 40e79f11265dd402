#!/usr/bin/env python3
"""A small deterministic agent for `codebox agent-task` (docs/agent-tasks.md, "The example agent").

It speaks the JSON-lines protocol on stdin/stdout and touches files only through Codebox's tools:
it reads the task, lists the workspace, greps for the text to replace, reads each file it found,
edits it (workspace.edit, naming how many times the text occurs; with a unified-diff patch,
workspace.patch, where only that is offered), checks the result with workspace.diff and finishes.
What to replace comes from the task's context ``{"find": "...", "replace": "..."}`` or from a goal of the
form ``replace "OLD" with "NEW"``. Nothing to replace is an honest no-op.

    codebox agent-task --workspace examples/simple-plugin \
        --task 'replace "Hello" with "Howdy"' --agent "python3 examples/agents/example_agent.py"

Only the Python standard library; no network, no host files.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from typing import Any

_next_id = 0


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call(tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """One tool call; returns the host-tool-result/v1 document Codebox answers with."""
    global _next_id
    _next_id += 1
    send({"type": "tool_call", "id": str(_next_id), "tool": tool, "input": tool_input})
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("codebox closed the protocol")
    reply = json.loads(line)
    return reply["result"]


def finish(status: str, summary: str) -> None:
    send({"type": "final", "status": status, "summary": summary})


def log(message: str) -> None:
    send({"type": "log", "message": message})


def what_to_replace(task: dict[str, Any]) -> tuple[str, str] | None:
    context = task.get("context") or {}
    if isinstance(context.get("find"), str) and isinstance(context.get("replace"), str):
        return context["find"], context["replace"]
    match = re.search(r'replace\s+"([^"]+)"\s+with\s+"([^"]*)"', task.get("goal", ""))
    return (match.group(1), match.group(2)) if match else None


def patch_for(path: str, before: str, after: str) -> str:
    rel = path.removeprefix("/workspace/")
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def main() -> None:
    first = json.loads(sys.stdin.readline())
    task = first["task"]
    tools = set(first["tool_bridge"]["allowed_tools"])
    pair = what_to_replace(task)
    if pair is None:
        finish("failed", 'the task does not say what to replace (context.find/replace or \'replace "A" with "B"\')')
        return
    find, replace = pair
    listing = call("workspace.list", {"depth": 3})
    if listing["status"] != "ok":
        finish("failed", f"cannot list the workspace: {listing['error']['message']}")
        return
    log(f"{len(listing['output']['entries'])} entries in the workspace")
    found = call("workspace.grep", {"pattern": find, "fixed": True})
    if found["status"] != "ok":
        finish("failed", f"grep failed: {found['error']['message']}")
        return
    paths = sorted({m["path"] for m in found["output"]["matches"]})
    if not paths:
        finish("completed", f"nothing to do: {find!r} does not occur in the workspace")
        return
    if not tools & {"workspace.edit", "workspace.patch"}:
        finish("failed", "the tool bridge exposes neither workspace.edit nor workspace.patch")
        return
    changed = []
    for path in paths:
        read = call("workspace.read", {"path": path})
        if read["status"] != "ok":
            finish("failed", f"cannot read {path}: {read['error']['message']}")
            return
        before = read["output"]["content"]
        if "workspace.edit" in tools:
            edited = call("workspace.edit", {"path": path, "old": find, "new": replace, "count": before.count(find)})
        else:
            edited = call("workspace.patch", {"patch": patch_for(path, before, before.replace(find, replace))})
        if edited["status"] != "ok":
            finish("failed", f"the edit of {path} was refused: {edited['error']['code']}: {edited['error']['message']}")
            return
        changed.append(path)
    diff = call("workspace.diff", {})
    files = diff["output"]["files"] if diff["status"] == "ok" else changed
    finish("completed", f"replaced {find!r} with {replace!r} in {len(files)} file(s)")


if __name__ == "__main__":
    main()
