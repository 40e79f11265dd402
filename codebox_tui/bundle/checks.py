"""A recipe run's verdict from its check and probe results (pure: no I/O, no sandbox).

One rule, used by ``recipe-run`` when it finishes and by every reader of a recipe bundle
(``codebox artifacts show``, the Review screen), so they can never disagree:

- ``passed`` only when every non-advisory check passed: no failed step (unless ``advisory`` or
  ``allowFailure``), no failed probe (unless ``allowFailure``), no failed setup, no missing required
  artifact, no failed bundle verification;
- a failed ``advisory`` step, an ``allowFailure`` step or an ``allowFailure`` probe is a *warning*
  that carries its message and never fails the run; any other failure always does (exit code 1);
- a failed probe is described by its name, the JSON it was expected to contain and what came back.

Everything in a message may come from the sandbox: it is shortened (``MAX_SHOWN``) and made
terminal-safe with :func:`codebox_tui.textsafe.safe_text` (docs/architecture.md, module map: textsafe).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from codebox_tui.textsafe import safe_text

_TAG = re.compile(r"</?[a-z]+ ?/?>")  # PHP's html_errors markup: <b>, <br />
_PHP_ERROR = re.compile(r"\b(Fatal error|Parse error|Uncaught)\b")
MAX_SHOWN = 300  # characters of a JSON value or an error shown in one message


def shorten(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def short_json(value: Any, limit: int = MAX_SHOWN) -> str:
    """A JSON value on one line, shortened and terminal-safe."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # a circular structure: never from JSON, but never a crash either
        text = repr(value)
    return safe_text(shorten(text, limit))


def error_message(error: Any, limit: int = MAX_SHOWN) -> str:
    """One line for a recorded error: a CodeboxError dict's message, or the tail of a command's output."""
    if isinstance(error, Mapping):
        text = str(error.get("message") or error.get("code") or json.dumps(dict(error), default=str))
    elif error is None or error == "":
        return "failed (no message)"
    else:
        text = str(error)
    lines = [_TAG.sub("", line).strip() for line in text.strip().splitlines()]
    lines = [line for line in lines if line]
    # PHP's first error line says why (a stack trace follows it); otherwise the end of the output does
    reason = next((line for line in lines if _PHP_ERROR.search(line)), None)
    text = reason if reason else (" ⏎ ".join(lines[-3:]) if lines else text.strip())
    if len(text) > limit:
        text = "…" + text[-limit:]
    return safe_text(text)


def probe_message(probe: Mapping[str, Any]) -> str:
    """Why a failed probe failed: the expected JSON and what came back (the probe's name is beside it)."""
    expected = probe.get("expectJson")
    wanted = f"expected JSON containing {short_json(expected)}" if expected is not None else ""
    if "actualJson" in probe:
        return f"{wanted or 'expected success'}, got {short_json(probe['actualJson'])}"
    if probe.get("exitCode") not in (None, 0):
        head = f"exited with code {probe['exitCode']}"
    elif "actualOutput" in probe:
        head = f"printed no JSON: {short_json(probe['actualOutput'])}"
        return f"{head} ({wanted})" if wanted else head
    else:
        head = "failed"
    detail = error_message(probe.get("error"))
    return f"{head}: {detail}" + (f" ({wanted})" if wanted else "")


def probe_failure(probe: Mapping[str, Any]) -> dict[str, Any]:
    """The ``stepFailures`` record for a failed probe (names the probe, the expected JSON, the actual value)."""
    record: dict[str, Any] = {
        "phase": "probes",
        "probe": probe.get("name"),
        "command": probe.get("command"),
        "error": probe.get("error"),
        "message": probe_message(probe),
    }
    if probe.get("expectJson") is not None:
        record["expected"] = probe["expectJson"]
    if "actualJson" in probe:
        record["actual"] = probe["actualJson"]
    return record


def with_message(probe: dict[str, Any]) -> dict[str, Any]:
    """A probe result as stored in ``files/probes.json``: a failed one also says why in ``message``."""
    return {**probe, "message": probe_message(probe)} if probe.get("status") != "passed" else probe


def failed_probes(probes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The failure records of the probes that fail the run (failed and not ``allowFailure``)."""
    return [probe_failure(p) for p in probes if p.get("status") != "passed" and not p.get("allowFailure")]


def _what(record: Mapping[str, Any]) -> str:
    """What failed, for people: ``probe 'x'``, ``workflow.steps[1] (wordpress.run-php)``, ``artifact 'log'``."""
    if record.get("probe") is not None or record.get("phase") == "probes":
        return f"probe '{safe_text(record.get('probe', '?'))}'"
    if record.get("artifact") is not None:
        return f"artifact '{safe_text(record['artifact'])}'"
    phase = safe_text(record.get("phase", "?"))
    if record.get("command") is not None:
        index = record.get("index")
        return f"workflow.{phase}[{index if isinstance(index, int) else '?'}] ({safe_text(record['command'])})"
    return {"setup": "setup", "verify_bundle": "bundle verification"}.get(phase, phase)


def describe(record: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """One finding for output: ``what`` failed, a terminal-safe ``message``, and for a probe the
    expected and actual JSON (shortened)."""
    if record.get("phase") == "probes" and record.get("message"):
        message = safe_text(record["message"])
    else:
        message = error_message(record.get("error"))
    out: dict[str, Any] = {"kind": kind, "what": _what(record), "message": message}
    for key in ("expected", "actual"):
        if key in record:
            out[key] = short_json(record[key])
    return out


@dataclass(frozen=True)
class Verdict:
    status: str  # "passed" | "failed"; a reproduction recipe's: "reproduced" | "not-reproduced" | "failed"
    failures: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status in ("passed", "reproduced")

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "failures": self.failures, "warnings": self.warnings}


def recipe_verdict(
    step_failures: Iterable[Mapping[str, Any]],
    advisory_failures: Iterable[Mapping[str, Any]] = (),
    probes: Iterable[Mapping[str, Any]] = (),
    executions: Iterable[Mapping[str, Any]] = (),
    *,
    reproduction: bool = False,
) -> Verdict:
    """The verdict of a recipe run from what it recorded (the result or ``files/run-attestation.json``).

    ``step_failures``: the failures that fail the run (steps, setup, probes, artifacts, verification);
    ``advisory_failures``: failed advisory steps; ``probes``: every probe result; ``executions``: every
    step run (a failed one marked ``allowFailure`` is a warning). A failed non-``allowFailure`` probe
    fails the run even when ``step_failures`` omits it (fail closed on an incomplete record).

    ``reproduction`` (a recipe of kind ``reproduction``): its probes describe the bug, so all of them passing is
    ``reproduced``; a failed probe (and nothing else failed) is ``not-reproduced``; any other failure (a step,
    the setup, an artifact) means nothing can be said and stays ``failed``."""
    recorded = [dict(f) for f in step_failures]
    probes = list(probes)
    named = {f.get("probe") for f in recorded if f.get("phase") == "probes"}
    recorded += [f for f in failed_probes(probes) if f.get("probe") not in named]
    by_name = {p.get("name"): p for p in probes}
    failures = []
    for record in recorded:
        probe = by_name.get(record.get("probe")) if record.get("phase") == "probes" else None
        failures.append(
            describe(
                probe_failure(probe) if probe is not None else record,
                "probe" if record.get("phase") == "probes" else "failure",
            )
        )
    warnings = [describe(a, "advisory") for a in advisory_failures]
    for run in executions:
        failed = run.get("error") is not None or run.get("exitCode") not in (None, 0)
        if run.get("allowFailure") and failed:
            record = {**run, "error": run.get("error") or f"exited with code {run.get('exitCode')}"}
            warnings.append(describe(record, "allowed-failure"))
    warnings += [
        describe(probe_failure(p), "allowed-probe-failure")
        for p in probes
        if p.get("status") != "passed" and p.get("allowFailure")
    ]
    if reproduction:
        others = [r for r in recorded if r.get("phase") != "probes"]
        ran = any(p.get("status") == "passed" for p in probes)
        status = "failed" if others or not probes else ("not-reproduced" if failures or not ran else "reproduced")
        return Verdict(status, failures, warnings)
    return Verdict("failed" if failures else "passed", failures, warnings)


def verdict_lines(verdict: Verdict) -> list[str]:
    """Human lines: every failure, then every warning (each already terminal-safe)."""
    lines = [f"FAILED  {f['what']}: {f['message']}" for f in verdict.failures]
    lines += [f"warning {w['what']}: {w['message']}" for w in verdict.warnings]
    return lines
