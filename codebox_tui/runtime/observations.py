"""The observations of a runtime episode (docs/episodes.md, "Observations"): each type reads something real from
the run — its sandbox, its mounts, its recorded commands, events and logs — and returns the observation's ``data``
(JSON) and the bundle files it wrote (``artifactRefs``).

Everything read from inside the sandbox is hostile: parsed as JSON, checked, capped, and passed through the run's
redactor before it is recorded.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from codebox_tui.bundle import layout
from codebox_tui.contracts.canonical import pretty_json, sha256_hex
from codebox_tui.contracts.episode import ObservationSpec
from codebox_tui.contracts.runtime import ExecutionResult
from codebox_tui.contracts.site_state import StateExportConfig
from codebox_tui.errors import BadInputError, SandboxError
from codebox_tui.runtime.context import CommandContext
from codebox_tui.runtime.site_state import export_wordpress_state

OBSERVATIONS_DIR: Final = layout.OBSERVATIONS_DIR
MAX_DIR_ENTRIES: Final = 500
MAX_TEXT_PREVIEW: Final = 4096  # characters of a command's output or a response body kept in an observation


@dataclass
class Observed:
    """An observation's data and the bundle files it wrote: ``(path, kind, sha256)`` each."""

    data: Any
    files: list[tuple[str, str, str]] = field(default_factory=list)


def observation_file(observation_id: str, suffix: str) -> str:
    """``files/observations/<observationId>-<suffix>`` (the id's ``:`` separators become ``-``)."""
    return f"{OBSERVATIONS_DIR}/{observation_id.replace(':', '-')}-{suffix}"


def _preview(text: str, limit: int = MAX_TEXT_PREVIEW) -> dict[str, Any]:
    raw = text.encode("utf-8", "surrogatepass")
    return {
        "bytes": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
        "text": text[:limit],
        "truncated": len(text) > limit,
    }


def execution_summary(execution: ExecutionResult, step: int | None) -> dict[str, Any]:
    """A command's result as an observation sees it: exit code, status, timing and the start of its output."""
    result = execution.result
    return {
        "step": step,
        "executionId": execution.id,
        "command": execution.command,
        "args": list(execution.args),
        "exitCode": execution.exitCode,
        "status": result.status if result is not None else None,
        "durationMs": execution.durationMs,
        "stdout": _preview(execution.stdout),
        "stderr": _preview(execution.stderr),
        **(
            {"error": result.error.model_dump(mode="json", exclude_none=True)}
            if result is not None and result.error is not None
            else {}
        ),
    }


FILES_PHP: Final = r"""<?php
$paths = json_decode(base64_decode('%(paths)s'), true);
$out = [];
foreach ($paths as $p) {
    $e = ['path' => $p];
    if (is_link($p)) { $e['type'] = 'link'; $t = @readlink($p); $e['target'] = $t === false ? null : $t; }
    elseif (is_file($p)) {
        $e['type'] = 'file'; $e['bytes'] = filesize($p); $h = @hash_file('sha256', $p);
        $e['sha256'] = $h === false ? null : $h; $e['mtime'] = filemtime($p);
    } elseif (is_dir($p)) {
        $e['type'] = 'directory'; $names = @scandir($p);
        $names = $names === false ? [] : array_values(array_diff($names, ['.', '..']));
        sort($names); $e['count'] = count($names); $e['entries'] = array_slice($names, 0, %(max)d);
    } else { $e['type'] = 'missing'; }
    $out[] = $e;
}
echo json_encode(['files' => $out], JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE);
"""


def _files(session: CommandContext, spec: ObservationSpec, timeout_s: float) -> Observed:
    encoded = base64.b64encode(json.dumps(spec.paths).encode("utf-8")).decode("ascii")
    result = session.sandbox.run_php(FILES_PHP % {"paths": encoded, "max": MAX_DIR_ENTRIES}, timeout_s)
    try:
        value = json.loads(result.text)
        files = value["files"]
        if not isinstance(files, list) or len(files) != len(spec.paths):
            raise ValueError("wrong length")
    except (ValueError, KeyError, TypeError):
        detail = (result.errors or result.text).strip()[:300]
        raise SandboxError(
            f"files observation: the sandbox printed no file list (exit {result.exit_code}): {detail}",
            code="observation-failed",
        ) from None
    clean = []
    for asked, entry in zip(spec.paths, files, strict=True):
        if not isinstance(entry, dict) or entry.get("type") not in ("file", "directory", "link", "missing"):
            raise SandboxError(f"files observation: the entry for {asked} is malformed", code="observation-failed")
        kept: dict[str, Any] = {"path": asked, "type": entry["type"]}
        for key, kind in (("bytes", int), ("mtime", int), ("count", int), ("sha256", str), ("target", str)):
            if isinstance(entry.get(key), kind) and not isinstance(entry.get(key), bool):
                kept[key] = entry[key]
        if entry["type"] == "directory":
            names = entry.get("entries")
            kept["entries"] = (
                [n for n in names if isinstance(n, str)][:MAX_DIR_ENTRIES] if isinstance(names, list) else []
            )
        clean.append(kept)
    return Observed({"files": clean})


def _wordpress_state(session: CommandContext, spec: ObservationSpec, observation_id: str, timeout_s: float) -> Observed:
    """The ``wordpress-state`` export: each section to ``files/observations/<id>-wordpress-state-<section>.json``,
    the data keeping a summary of each section and where its document is (spec §10)."""
    config = StateExportConfig.model_validate(
        {
            **({"sections": spec.sections} if spec.sections else {}),
            "redaction": spec.redaction,
            "includeContent": spec.includeContent,
            "optionNames": spec.optionNames,
        }
    )
    export = export_wordpress_state(session.sandbox, config, timeout_s=timeout_s)
    observed = Observed({})
    summaries: dict[str, Any] = {}
    artifacts: dict[str, Any] = {}
    for document in export.sections:
        rel = observation_file(observation_id, f"wordpress-state-{document.section}.json")
        text = session.redact(pretty_json(document.model_dump(mode="json", by_alias=True, exclude_none=True)))
        data = text.encode("utf-8")
        session.add_evidence(rel, "wordpress-state-section", "application/json").write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        observed.files.append((rel, "wordpress-state-section", digest))
        artifacts[document.section] = {"artifact": rel, "sha256": digest, "bytes": len(data)}
        summaries[document.section] = {
            key: (len(value) if isinstance(value, list | dict) else value)
            for key, value in sorted(document.data.items())
            if isinstance(value, list | dict | int | str) and not isinstance(value, bool)
        }
    observed.data = {
        "config": config.model_dump(mode="json"),
        "sections": session.redact.value(summaries),
        "artifacts": artifacts,
    }
    return observed


def _header_text(value: Any) -> str:
    """A response header's value as text (the sidecar sends repeated headers as a list), at most 512 characters."""
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)[:512]
    return str(value)[:512]


def _http_response(session: CommandContext, spec: ObservationSpec, timeout_s: float) -> Observed:
    assert spec.path is not None
    response = session.sandbox.request(spec.path, timeout_s, spec.method)
    headers = {str(k).lower(): v for k, v in response.headers.items()}
    kept = {
        name: _header_text(headers[name])
        for name in ("content-type", "location", "x-pingback", "link")
        if name in headers
    }
    return Observed(
        session.redact.value(
            {
                "path": spec.path,
                "method": spec.method,
                "status": response.status,
                "headers": kept,
                "body": _preview(response.text),
            }
        )
    )


def _browser_result(session: CommandContext, spec: ObservationSpec, timeout_s: float) -> Observed:
    """Runs ``wordpress.browser-probe`` (under the policy, recorded in commands.jsonl like any command)."""
    execution = session.execute("wordpress.browser-probe", list(spec.args), timeout_s)
    observed = Observed(
        {
            "execution": execution_summary(execution, None),
            "probe": execution.result.json_ if execution.result is not None else None,
        }
    )
    for ref in execution.artifactRefs or []:
        rel = ref.get("path")
        if isinstance(rel, str) and (session.run_dir / rel).is_file():
            observed.files.append(
                (rel, str(ref.get("kind") or "browser-evidence"), sha256_hex((session.run_dir / rel).read_bytes()))
            )
    return observed


def _read_tail(path: Path, max_bytes: int) -> dict[str, Any]:
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            handle.seek(max(0, size - max_bytes))
            data = handle.read(max_bytes)
    except OSError:
        return {"bytes": 0, "tail": ""}
    return {"bytes": size, "tail": data.decode("utf-8", "replace"), "truncated": size > max_bytes}


def _runtime_events(session: CommandContext, spec: ObservationSpec) -> Observed:
    lines = (session.run_dir / layout.EVENTS).read_text(encoding="utf-8", errors="replace").splitlines()
    events = []
    for line in lines[-spec.limit :]:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append({key: event[key] for key in ("id", "type", "timestamp", "level", "data") if key in event})
    return Observed({"total": len(lines), "events": events})


def observe(
    session: CommandContext,
    spec: ObservationSpec,
    observation_id: str,
    *,
    timeout_s: float = 120.0,
    executions: list[tuple[int, ExecutionResult]] | None = None,
) -> Observed:
    """The ``data`` (and files) of one observation of ``spec.type``; ``executions`` are the episode's steps
    (index, result) for ``command-result``."""
    kind = spec.type
    if kind == "runtime-info":
        return Observed(session.runtime_info().model_dump(mode="json", exclude_none=True))
    if kind == "mounts":
        mounts = [
            {"index": i, "role": "input", **m.model_dump(mode="json"), "writeMode": m.write_mode}
            for i, m in enumerate(session.spec.mounts)
        ]
        mounts += [
            {"role": "tool", **m.model_dump(mode="json"), "writeMode": m.write_mode} for m in session.spec.extra_mounts
        ]
        return Observed({"mounts": mounts})
    if kind == "command-result":
        steps = executions or []
        if not steps:
            raise BadInputError("command-result: no step has run yet", code="invalid-observation", field="step")
        chosen = steps[-1] if spec.step is None else next((s for s in steps if s[0] == spec.step), None)
        if chosen is None:
            raise BadInputError(
                f"command-result: there is no step {spec.step} (steps so far: {len(steps)})",
                code="invalid-observation",
                field="step",
            )
        return Observed(execution_summary(chosen[1], chosen[0]))
    if kind == "runtime-events":
        return _runtime_events(session, spec)
    if kind == "runtime-logs":
        return Observed(
            {
                "runtime": _read_tail(session.run_dir / layout.RUNTIME_LOG, spec.maxBytes),
                "commands": _read_tail(session.run_dir / layout.COMMANDS_LOG, spec.maxBytes),
            }
        )
    if kind == "files":
        return _files(session, spec, timeout_s)
    if kind == "wordpress-state":
        return _wordpress_state(session, spec, observation_id, timeout_s)
    if kind == "http-response":
        return _http_response(session, spec, timeout_s)
    if kind == "browser-result":
        return _browser_result(session, spec, timeout_s)
    raise BadInputError(f"unknown observation type {kind!r}", code="invalid-observation", field="type")
