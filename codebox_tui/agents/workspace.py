"""The built-in workspace tools: ``workspace.read``, ``.list``, ``.grep``, ``.write``, ``.patch``, ``.diff``
(docs/agent-tasks.md, "Workspace tools").

They act on the sandbox's ``/workspace``, never on host paths: read, list and grep are ``codebox exec``
command lines run with the ``read`` capability only (so the sidecar's classifier and its read-only file
system confine them, docs/exec.md); write, patch and diff move exact bytes through Playground's own file
API on the booted sandbox. Every path is normalised first and must stay inside a workspace mount, outside
any ``.git``. Each exec is recorded in the run's ``commands.jsonl`` like any other.
"""

from __future__ import annotations

import difflib
import posixpath
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codebox_tui.agents.registry import HostTool, ToolFailure
from codebox_tui.bundle.patchparse import split_sections
from codebox_tui.contracts.exec import ExecLimits, ExecRequest
from codebox_tui.errors import CodeboxError
from codebox_tui.runtime.exec import run_exec
from store.patchtext import PatchError, apply_block, normalize_patch_path

if TYPE_CHECKING:
    from codebox_tui.runtime.session import RunSession

WORKSPACE_ROOT = "/workspace"
MAX_FILE_BYTES = 1024 * 1024
MAX_WRITE_BYTES = 4 * 1024 * 1024
MAX_LIST_ENTRIES = 5000


@dataclass
class WorkspaceContext:
    """What the workspace tools act on: the run's session, the workspace mount targets, the bytes each
    file had before the first tool wrote it (for ``workspace.diff``) and the per-call time limit."""

    session: RunSession
    roots: list[str]
    timeout_s: float = 30.0
    originals: dict[str, bytes | None] = field(default_factory=dict)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)

    def path(self, raw: Any, *, writable: bool = False) -> str:
        """``raw`` (absolute, or relative to /workspace) → a normalised sandbox path inside the workspace
        (inside one of its mounts when ``writable``); anything else is a tool failure naming it."""
        text = str(raw or "")
        if not text or any(ch in text for ch in "\0\n\r") or len(text) > 4096:
            raise ToolFailure(f"path {text[:200]!r} must be a non-empty single-line path", "host-tool-invalid-input")
        joined = text if text.startswith("/") else posixpath.join(WORKSPACE_ROOT, text)
        path = posixpath.normpath(joined)
        inside = path == WORKSPACE_ROOT or path.startswith(WORKSPACE_ROOT + "/")
        if not inside or ".." in text.split("/"):
            raise ToolFailure(f"path {text!r} is outside {WORKSPACE_ROOT}", "host-tool-invalid-input")
        if ".git" in path.split("/"):
            raise ToolFailure(
                f"path {text!r} is inside .git, which the workspace tools never touch", "host-tool-invalid-input"
            )
        if writable and not any(path.startswith(root + "/") for root in self.roots):
            raise ToolFailure(
                f"path {text!r} is not inside a workspace mount ({', '.join(self.roots)})", "host-tool-invalid-input"
            )
        return path

    def exec(self, command: str, *, write: bool = False, max_output: int = MAX_FILE_BYTES) -> tuple[int, str, str]:
        caps: list[Any] = ["read", "write"] if write else ["read"]
        request = ExecRequest(
            command=command,
            cwd=WORKSPACE_ROOT,
            capabilities=caps,
            limits=ExecLimits(timeoutMs=int(self.timeout_s * 1000), maxOutputBytes=max_output),
        )
        try:
            result = run_exec(self.session, request)
        except CodeboxError as error:
            raise ToolFailure(f"the sandbox could not run the tool: {error.message}") from None
        if result.error is not None:
            raise ToolFailure(
                result.error.message,
                "host-tool-denied" if result.error.code == "capability-denied" else "host-tool-handler-error",
            )
        if result.limitExceeded:
            raise ToolFailure(
                f"the tool hit the sandbox's {result.limitExceeded} limit",
                "host-tool-timeout" if result.limitExceeded == "timeoutMs" else "host-tool-handler-error",
            )
        return result.exitCode, result.stdout, result.stderr

    def read_bytes(self, path: str) -> bytes | None:
        """A file's exact bytes through Playground's file API (None: no such file)."""
        _, out, _ = self.exec(f"test -f {shlex.quote(path)} && echo file || echo none")
        if out.strip() != "file":
            return None
        try:
            return self.session.sandbox.read_file(path, self.timeout_s, max_bytes=MAX_WRITE_BYTES)
        except CodeboxError as error:
            raise ToolFailure(f"cannot read {path}: {error.message}") from None

    def write_bytes(self, path: str, data: bytes | None) -> None:
        """Write (or delete, for None) one file, remembering its bytes before the first change."""
        if path not in self.originals:
            self.originals[path] = self.read_bytes(path)
        if data is None:
            code, _, err = self.exec(f"rm -f -- {shlex.quote(path)}", write=True)
        else:
            code, _, err = self.exec(f"mkdir -p -- {shlex.quote(posixpath.dirname(path))}", write=True)
            if code == 0:
                try:
                    self.session.sandbox.write_file(path, data, self.timeout_s)
                except CodeboxError as error:
                    raise ToolFailure(f"cannot write {path}: {error.message}") from None
        if code != 0:
            raise ToolFailure(f"cannot change {path}: {err.strip()[:500]}")


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_PATH = {"type": "string", "minLength": 1, "maxLength": 4096}
_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}


def _read(data: dict[str, Any], ctx: WorkspaceContext) -> dict[str, Any]:
    path = ctx.path(data["path"])
    limit = int(data.get("maxBytes") or MAX_FILE_BYTES)
    code, out, err = ctx.exec(f"cat -- {shlex.quote(path)}", max_output=min(limit, MAX_FILE_BYTES))
    if code != 0:
        raise ToolFailure(err.strip()[:500] or f"cannot read {path}")
    return {"path": path, "content": out, "bytes": len(out.encode("utf-8", "surrogatepass"))}


def _list(data: dict[str, Any], ctx: WorkspaceContext) -> dict[str, Any]:
    path = ctx.path(data.get("path") or WORKSPACE_ROOT)
    depth = max(1, min(int(data.get("depth") or 1), 20))
    entries: list[dict[str, str]] = []
    for kind, flag in (("dir", "d"), ("file", "f")):
        code, out, err = ctx.exec(f"find {shlex.quote(path)} -mindepth 1 -maxdepth {depth} -type {flag}")
        if code != 0:
            raise ToolFailure(err.strip()[:500] or f"cannot list {path}")
        entries += [{"path": line, "type": kind} for line in out.splitlines() if line]
    entries.sort(key=lambda e: e["path"])
    return {"path": path, "entries": entries[:MAX_LIST_ENTRIES], "truncated": len(entries) > MAX_LIST_ENTRIES}


def _grep(data: dict[str, Any], ctx: WorkspaceContext) -> dict[str, Any]:
    path = ctx.path(data.get("path") or WORKSPACE_ROOT)
    flags = "-rn" + ("F" if data.get("fixed") else "") + ("i" if data.get("ignoreCase") else "")
    code, out, err = ctx.exec(f"grep {flags} -e {shlex.quote(str(data['pattern']))} -- {shlex.quote(path)}")
    if code not in (0, 1):
        raise ToolFailure(err.strip()[:500] or "grep failed")
    limit = int(data.get("maxMatches") or 200)
    matches: list[dict[str, Any]] = []
    for line in out.splitlines():
        file, sep, rest = line.partition(":")
        number, sep2, text = rest.partition(":")
        if sep and sep2 and number.isdigit():
            matches.append({"path": file, "line": int(number), "text": text[:2000]})
    return {"matches": matches[:limit], "truncated": len(matches) > limit}


def _write(data: dict[str, Any], ctx: WorkspaceContext) -> dict[str, Any]:
    path = ctx.path(data["path"], writable=True)
    content = str(data["content"]).encode("utf-8", "surrogatepass")
    if len(content) > MAX_WRITE_BYTES:
        raise ToolFailure(f"content is over {MAX_WRITE_BYTES} bytes", "host-tool-invalid-input")
    existed = ctx.read_bytes(path) is not None
    ctx.write_bytes(path, content)
    return {"path": path, "bytes": len(content), "created": not existed}


def _edit(data: dict[str, Any], ctx: WorkspaceContext) -> dict[str, Any]:
    """Replace ``old`` with ``new`` in one existing file, where ``old`` occurs exactly ``count`` times (1 unless
    given): any other number means the caller's view of the file is stale or its text too short to be unique,
    so the edit is refused and nothing is written."""
    path = ctx.path(data["path"], writable=True)
    old = str(data["old"]).encode("utf-8", "surrogatepass")
    new = str(data["new"]).encode("utf-8", "surrogatepass")
    expected = int(data.get("count", 1))
    before = ctx.read_bytes(path)
    if before is None:
        raise ToolFailure(f"{path} does not exist")
    found = before.count(old)
    if found != expected:
        raise ToolFailure(
            f"{path} has {found} occurrence(s) of the text to replace, not the {expected} expected; "
            "nothing was written",
            details={"found": found, "expected": expected},
        )
    after = before.replace(old, new)
    if len(after) > MAX_WRITE_BYTES:
        raise ToolFailure(f"the edited file would be over {MAX_WRITE_BYTES} bytes", "host-tool-invalid-input")
    ctx.write_bytes(path, after)
    return {"path": path, "replaced": found, "bytes": len(after)}


def _patch(data: dict[str, Any], ctx: WorkspaceContext) -> dict[str, Any]:
    """Apply a unified diff whose paths are relative to /workspace (``a/``/``b/`` prefixes allowed); every
    file's block must apply exactly, or nothing is written."""
    text = str(data["patch"])
    sections = split_sections(text)
    if not sections:
        raise ToolFailure("the patch has no file sections (expected a unified diff)", "host-tool-invalid-input")
    planned: list[tuple[str, bytes | None, str]] = []
    for section in sections:
        old = normalize_patch_path(section.old_path) if section.old_path else None
        new = normalize_patch_path(section.new_path) if section.new_path else None
        name = new or old
        if name is None:
            raise ToolFailure("a patch section names no file", "host-tool-invalid-input")
        path = ctx.path(name, writable=True)
        before = ctx.read_bytes(path) if old is not None else None
        if old is not None and before is None:
            raise ToolFailure(f"the patch changes {path}, which does not exist")
        try:
            after: bytes | None = apply_block(before, section.text.encode("utf-8", "surrogateescape"))
        except PatchError as error:
            raise ToolFailure(f"the patch does not apply to {path}: {error}") from None
        status = "deleted" if new is None else ("added" if old is None else "modified")
        planned.append((path, None if status == "deleted" else after, status))
    for path, after, _ in planned:
        ctx.write_bytes(path, after)
    return {"files": [{"path": path, "status": status} for path, _, status in planned]}


def _diff(data: dict[str, Any], ctx: WorkspaceContext) -> dict[str, Any]:
    """The unified diff of the files the tools changed, against their bytes before the first change."""
    only = ctx.path(data["path"]) if data.get("path") else None
    chunks: list[str] = []
    files: list[str] = []
    for path in sorted(ctx.originals):
        if only is not None and path != only and not path.startswith(only.rstrip("/") + "/"):
            continue
        before, after = ctx.originals[path], ctx.read_bytes(path)
        if before == after:
            continue
        files.append(path)
        old = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = (after or b"").decode("utf-8", "replace").splitlines(keepends=True)
        rel = path.removeprefix(WORKSPACE_ROOT + "/")
        chunks.append(
            "".join(
                difflib.unified_diff(
                    old,
                    new,
                    "/dev/null" if before is None else f"a/{rel}",
                    "/dev/null" if after is None else f"b/{rel}",
                )
            )
        )
    return {"diff": "".join(chunks), "files": files}


def workspace_tools() -> list[HostTool]:
    """The seven built-in tools (all runtime-local, visible to the sandbox)."""
    return [
        HostTool(
            "workspace.read",
            "Read a text file of the workspace.",
            _obj({"path": _PATH, "maxBytes": {"type": "integer", "minimum": 1}}, ["path"]),
            _obj({"path": _STR, "content": _STR, "bytes": _INT}, ["path", "content", "bytes"]),
            "read",
            _read,
            capability="workspace.read",
        ),
        HostTool(
            "workspace.list",
            "List the files and folders under a workspace path.",
            _obj({"path": _PATH, "depth": {"type": "integer", "minimum": 1, "maximum": 20}}, []),
            _obj(
                {
                    "path": _STR,
                    "truncated": {"type": "boolean"},
                    "entries": {
                        "type": "array",
                        "items": _obj({"path": _STR, "type": {"enum": ["file", "dir"]}}, ["path", "type"]),
                    },
                },
                ["path", "entries", "truncated"],
            ),
            "read",
            _list,
            capability="workspace.read",
        ),
        HostTool(
            "workspace.grep",
            "Search workspace files for a pattern (basic regular expression, or fixed).",
            _obj(
                {
                    "pattern": {"type": "string", "minLength": 1, "maxLength": 1000},
                    "path": _PATH,
                    "fixed": {"type": "boolean"},
                    "ignoreCase": {"type": "boolean"},
                    "maxMatches": {"type": "integer", "minimum": 1, "maximum": 5000},
                },
                ["pattern"],
            ),
            _obj(
                {
                    "truncated": {"type": "boolean"},
                    "matches": {
                        "type": "array",
                        "items": _obj(
                            {"path": _STR, "line": {"type": "integer", "minimum": 1}, "text": _STR},
                            ["path", "line", "text"],
                        ),
                    },
                },
                ["matches", "truncated"],
            ),
            "read",
            _grep,
            capability="workspace.read",
        ),
        HostTool(
            "workspace.write",
            "Create or replace a workspace file with the given text.",
            _obj({"path": _PATH, "content": _STR}, ["path", "content"]),
            _obj({"path": _STR, "bytes": _INT, "created": {"type": "boolean"}}, ["path", "bytes", "created"]),
            "write",
            _write,
            capability="workspace.write",
        ),
        HostTool(
            "workspace.edit",
            "Replace a text in one workspace file, where it occurs exactly `count` times (default 1).",
            _obj(
                {
                    "path": _PATH,
                    "old": {"type": "string", "minLength": 1},
                    "new": _STR,
                    "count": {"type": "integer", "minimum": 1},
                },
                ["path", "old", "new"],
            ),
            _obj({"path": _STR, "replaced": _INT, "bytes": _INT}, ["path", "replaced", "bytes"]),
            "write",
            _edit,
            capability="workspace.write",
        ),
        HostTool(
            "workspace.patch",
            "Apply a unified diff (paths relative to /workspace); all or nothing.",
            _obj({"patch": {"type": "string", "minLength": 1}}, ["patch"]),
            _obj(
                {
                    "files": {
                        "type": "array",
                        "items": _obj(
                            {"path": _STR, "status": {"enum": ["added", "modified", "deleted"]}}, ["path", "status"]
                        ),
                    }
                },
                ["files"],
            ),
            "write",
            _patch,
            capability="workspace.write",
        ),
        HostTool(
            "workspace.diff",
            "The unified diff of what the workspace tools changed so far.",
            _obj({"path": _PATH}, []),
            _obj({"diff": _STR, "files": {"type": "array", "items": _STR}}, ["diff", "files"]),
            "read",
            _diff,
            capability="workspace.read",
        ),
    ]


def parent_only_tools() -> list[HostTool]:
    """Declared so the tool policy lists them for diagnostics; they are never exposed to a sandbox task
    (push, deploy, merge and apply-back belong to the parent control plane)."""
    empty = {"type": "object"}
    return [
        HostTool(
            name,
            description,
            empty,
            empty,
            "external",
            None,
            execution_location="parent",
            visibility="parent",
            scope="control_plane",
        )
        for name, description in (
            ("git.push", "Push a branch (parent only)."),
            ("deploy", "Deploy a site (parent only)."),
            ("pull-request.merge", "Merge a pull request (parent only)."),
            ("artifacts.apply", "Apply an approved bundle back (parent only)."),
        )
    ]
