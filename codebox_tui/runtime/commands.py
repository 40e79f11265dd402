"""Handlers for the core runtime commands (the command catalog maps each command id to one of them)."""

from __future__ import annotations

import base64
import json
import secrets
import shlex
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codebox_tui.bundle import layout
from codebox_tui.contracts.canonical import pretty_json, sha256_hex
from codebox_tui.contracts.common import new_id, utc_now_iso
from codebox_tui.contracts.episode import EpisodeObservation, ObservationSpec, episode_digest
from codebox_tui.errors import BadInputError
from codebox_tui.runtime import site_state
from codebox_tui.runtime.context import CommandContext
from codebox_tui.runtime.observations import observe as take
from codebox_tui.runtime.outcome import CommandOutcome
from codebox_tui.runtime.php_literal import php_string
from codebox_tui.runtime.site_state import (
    export_config_from_args,
    export_wordpress_state,
    externalize_files,
    readonly_content_paths,
    snapshot_scope,
    take_snapshot,
)

WP_CLI_DIR = "/codebox-tools/wp-cli"
# How to give a run WP-CLI (lifecycle/tools.py looks in this order); the exec shell's `wp` says the same
# (runtime/node/exec.mjs).
WP_CLI_HINT = (
    "pass --wp-cli-phar PATH or set CODEBOX_WP_CLI_PHAR to a wp-cli.phar, or put WP-CLI on PATH as `wp` "
    "(the phar itself or a link to it); get the phar from https://wp-cli.org/#installing "
    "(https://raw.githubusercontent.com/wp-cli/builds/gh-pages/phar/wp-cli.phar)"
)


def _outcome(
    stdout: str,
    stderr: str = "",
    exit_code: int = 0,
    json_value: object = None,
    truncated: dict[str, Any] | None = None,
) -> CommandOutcome:
    return CommandOutcome(stdout=stdout, stderr=stderr, exit_code=exit_code, json=json_value, truncated=truncated)


def sandbox_env(session: CommandContext) -> dict[str, str]:
    """The runtime environment (``spec.env``) plus the allow-listed secrets (secrets win on a clash)."""
    return {**session.spec.env, **session.spec.secret_env}


def secret_prelude(session: CommandContext) -> str:
    """PHP that exposes the runtime env and the allow-listed secrets through getenv()/$_ENV."""
    lines = []
    for name, value in sandbox_env(session).items():
        lines.append(f"putenv({php_string(name + '=' + value)}); $_ENV[{php_string(name)}] = {php_string(value)};")
    return "\n".join(lines)


def inspect_mounted_inputs(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    targets = [{"target": m.target, "source": m.source, "mode": m.mode} for m in session.spec.mounts]
    code = (
        "<?php $mounts = json_decode(" + php_string(json.dumps(targets)) + ", true); $out = [];"
        "foreach ($mounts as $m) { $t = $m['target']; $exists = file_exists($t);"
        " $entries = $exists && is_dir($t) ? array_values(array_diff(scandir($t), ['.', '..'])) : [];"
        " sort($entries); $out[] = ['target' => $t, 'source' => $m['source'], 'mode' => $m['mode'],"
        " 'exists' => $exists, 'entries' => $entries]; }"
        " echo json_encode(['command' => 'inspect-mounted-inputs', 'mounts' => $out], JSON_UNESCAPED_SLASHES);"
    )
    result = session.sandbox.run_php(code, timeout_s)
    return _outcome(result.text, result.errors, result.exit_code, truncated=result.truncated)


def _read_code(args: dict[str, str]) -> str:
    if "code" in args and "code-file" in args:
        raise BadInputError("Give code= or code-file=, not both", code="invalid-arg", field="code-file")
    if "code-file" in args:
        path = Path(args["code-file"]).expanduser()
        if not path.is_file():
            raise BadInputError(
                f"code-file {args['code-file']!r} does not exist", code="missing-code-file", field="code-file"
            )
        return path.read_text(encoding="utf-8", errors="replace")
    return args.get("code", "")


def run_php(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    code = _read_code(args)
    bootstrap = args.get("bootstrap", "wordpress")
    if bootstrap not in ("wordpress", "none"):
        raise BadInputError(
            f"bootstrap must be 'wordpress' or 'none', not {bootstrap!r}", code="invalid-arg", field="bootstrap"
        )
    if not code.lstrip().startswith("<?php") and not code.lstrip().startswith("<?"):
        code = "<?php\n" + code
    script = php_string(f"/tmp/codebox-{secrets.token_hex(8)}.php")
    encoded = base64.b64encode(code.encode("utf-8")).decode("ascii")
    # The code is written to its file by the sandbox's PHP that then runs it: one sandbox process per run-php
    # rather than a write and a run (a one-shot run's start-up, issue #28). It still runs from a file, so
    # __FILE__, line numbers and closing tags behave as in any PHP file.
    write = (
        f"if (file_put_contents({script}, base64_decode('{encoded}')) === false) "
        f"{{ throw new RuntimeException('could not write ' . {script} . ' in the sandbox'); }}"
    )
    loader = "require_once '/wordpress/wp-load.php';" if bootstrap == "wordpress" else ""
    wrapper = f"<?php\n{write}\n{secret_prelude(session)}\n{loader}\nrequire {script};\n"
    result = session.sandbox.run_php(wrapper, timeout_s)
    return _outcome(result.text, result.errors, result.exit_code, truncated=result.truncated)


def wp_cli(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    # the phar is a tool mount the run lifecycle adds (lifecycle/tools.py) when one is configured
    if not any(m.target == WP_CLI_DIR for m in session.spec.extra_mounts):
        raise BadInputError(
            "wordpress.wp-cli needs WP-CLI's wp-cli.phar and none was found: " + WP_CLI_HINT,
            code="wp-cli-phar-missing",
            field="wp-cli-phar",
            details={"hint": WP_CLI_HINT},
        )
    try:
        words = shlex.split(args["command"])
    except ValueError as error:
        raise BadInputError(
            f"command= is not a valid command line: {error}", code="invalid-arg", field="command"
        ) from error
    if words and words[0] == "wp":
        words = words[1:]
    argv = ["php", f"{WP_CLI_DIR}/wp-cli.phar", "--path=/wordpress", "--no-color", *words]
    result = session.sandbox.run_cli(argv, timeout_s, env=sandbox_env(session) or None)
    stdout = result.text
    if stdout.startswith("#!/usr/bin/env php"):
        stdout = stdout.split("\n", 1)[1] if "\n" in stdout else ""
    return _outcome(stdout, result.errors, result.exit_code, truncated=result.truncated)


ABILITY_RUNNER = r"""
$name = %(name)s; $input = json_decode(%(input)s, true);
$out = ['schema' => 'wp-codebox/wordpress-ability-result/v1', 'command' => 'wordpress.ability', 'name' => $name,
        'input' => $input];
if (!function_exists('wp_get_ability')) {
    $out['status'] = 'error';
    $out['error'] = ['code' => 'abilities-api-missing',
                     'message' => 'The WordPress Abilities API (wp_get_ability) is not available in this site'];
} else {
    if (function_exists('did_action') && !did_action('wp_abilities_api_init')) { do_action('wp_abilities_api_init'); }
    $ability = wp_get_ability($name);
    if (!$ability) {
        $out['status'] = 'error';
        $out['error'] = ['code' => 'ability-not-found', 'message' => "No ability named $name is registered"];
    } else {
        $result = $ability->execute($input);
        if (is_wp_error($result)) {
            $out['status'] = 'error';
            $out['error'] = ['code' => $result->get_error_code(), 'message' => $result->get_error_message(),
                             'data' => $result->get_error_data()];
        } else {
            $out['status'] = 'ok';
            $out['result'] = $result;
        }
    }
}
echo json_encode($out, JSON_UNESCAPED_SLASHES);
"""


def ability(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    raw_input = args.get("input", "null")
    try:
        json.loads(raw_input)
    except ValueError as error:
        raise BadInputError(f"input= must be JSON: {error}", code="invalid-arg", field="input") from error
    code = (
        "<?php\n"
        + secret_prelude(session)
        + "\nrequire_once '/wordpress/wp-load.php';\n"
        + ABILITY_RUNNER % {"name": php_string(args["name"]), "input": php_string(raw_input)}
    )
    result = session.sandbox.run_php(code, timeout_s)
    exit_code = result.exit_code
    parsed = None
    try:
        parsed = json.loads(result.text)
        if exit_code == 0 and parsed.get("status") != "ok":
            exit_code = 1
    except ValueError:
        pass
    return _outcome(result.text, result.errors, exit_code, parsed, truncated=result.truncated)


# -- site state: snapshots and checkpoints (docs/site-state.md) ------------------------------------
def _snapshot_scope(session: CommandContext, args: dict[str, str]) -> dict[str, Any]:
    return snapshot_scope(args, readonly_content_paths([*session.spec.mounts, *session.spec.extra_mounts]))


def capture_state_bundle(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    """Snapshot the site into ``files/runtime-snapshots/<id>.json`` (file bytes as content-addressed
    blobs beside it) and its wordpress-state export into ``files/wordpress-state/<id>.json``."""
    config = export_config_from_args(args)
    snapshot = take_snapshot(
        session.sandbox,
        _snapshot_scope(session, args),
        timeout_s=timeout_s,
        metadata={"runtime": session.runtime_id, "mounts": [m.model_dump(mode="json") for m in session.spec.mounts]},
    )
    export = export_wordpress_state(session.sandbox, config, timeout_s=timeout_s)
    rel, digest = store_snapshot(session, snapshot)
    refs = [{"path": rel, "kind": "runtime-snapshot", "sha256": digest}]
    rel = layout.wordpress_state_path(snapshot.id)
    text = session.redact(pretty_json(export.model_dump(mode="json", by_alias=True, exclude_none=True)))
    session.add_evidence(rel, "wordpress-state", "application/json").write_text(text, encoding="utf-8")
    refs.append({"path": rel, "kind": "wordpress-state", "sha256": sha256_hex(text)})
    stats = snapshot.metadata.get("stats") or {}
    result = {
        "command": "wordpress.capture-state-bundle",
        "status": "ok",
        "snapshot": {
            "id": snapshot.id,
            "semantics": "runtime-state-artifact",
            "hashes": snapshot.hashes.model_dump(),
            "compatibility": snapshot.compatibility.model_dump(),
            "stats": stats,
        },
        "sections": [s.section for s in export.sections],
        "artifactRefs": refs,
    }
    outcome = _outcome(json.dumps(result, sort_keys=True), json_value=result)
    outcome.artifact_refs = refs
    return outcome


def store_snapshot(session: CommandContext, snapshot: Any) -> tuple[str, str]:
    """Write a runtime snapshot into the run's bundle: the document to ``files/runtime-snapshots/<id>.json`` (kind
    ``runtime-snapshot``) and each file's bytes to a content-addressed blob beside it (kind
    ``runtime-snapshot-blob``; docs/site-state.md, "Snapshots in a bundle"). Returns the document's path and the
    sha256 of the bytes written."""

    def write_blob(rel: str, data: bytes) -> None:
        target = session.run_dir / rel
        if not target.exists():
            session.add_evidence(rel, "runtime-snapshot-blob", "application/octet-stream").write_bytes(
                session.redact.data(data)
            )

    stored = externalize_files(snapshot, write_blob)
    rel = layout.runtime_snapshot_path(stored.id)
    text = session.redact(pretty_json(stored.model_dump(mode="json", by_alias=True, exclude_none=True)))
    session.add_evidence(rel, "runtime-snapshot", "application/json").write_text(text, encoding="utf-8")
    return rel, sha256_hex(text)


def _checkpoint_outcome(result: Any) -> CommandOutcome:
    value = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return _outcome(json.dumps(value, sort_keys=True), json_value=value)


def checkpoint_create(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    metadata = None
    if args.get("metadata-json"):
        try:
            metadata = json.loads(args["metadata-json"])
        except ValueError as error:
            raise BadInputError(
                f"metadata-json must be JSON: {error}", code="invalid-arg", field="metadata-json"
            ) from error
        if not isinstance(metadata, dict):
            raise BadInputError("metadata-json must be a JSON object", code="invalid-arg", field="metadata-json")
    return _checkpoint_outcome(
        site_state.checkpoint_create(
            session.sandbox, args["name"], _snapshot_scope(session, args), metadata=metadata, timeout_s=timeout_s
        )
    )


def checkpoint_restore(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    return _checkpoint_outcome(site_state.checkpoint_restore(session.sandbox, args["name"], timeout_s=timeout_s))


def checkpoint_list(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    return _checkpoint_outcome(site_state.checkpoint_list(session.sandbox, timeout_s=timeout_s))


# -- observations as a command (recipe steps; docs/episodes.md, "Observations") -----------------------
def observe(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    """One episode observation of the run's sandbox, printed as its ``wp-codebox/runtime-episode-observation/v1``
    envelope (with its digest); a ``wordpress-state`` observation's section documents go to the bundle."""

    extra: Any = {}
    if args.get("spec-json"):
        try:
            extra = json.loads(args["spec-json"])
        except ValueError as error:
            raise BadInputError(f"spec-json must be JSON: {error}", code="invalid-arg", field="spec-json") from error
        if not isinstance(extra, dict):
            raise BadInputError("spec-json must be a JSON object", code="invalid-arg", field="spec-json")
    try:
        spec = ObservationSpec.model_validate({**extra, "type": args["type"]})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "type"
        raise BadInputError(
            f"observation {where}: {str(first['msg']).removeprefix('Value error, ')}",
            code="invalid-arg",
            field="type" if where == "type" else "spec-json",
        ) from None
    if spec.type == "browser-result":
        raise BadInputError(
            "a browser-result observation runs wordpress.browser-probe: run that command as the step instead",
            code="invalid-arg",
            field="type",
        )
    observation_id = new_id("observation")
    observed = take(session, spec, observation_id, timeout_s=timeout_s, executions=list(enumerate(session.executions)))
    data = session.redact.value(observed.data)
    refs = [
        {
            "kind": kind,
            "id": f"{observation_id}:{Path(rel).name}",
            "path": rel,
            "digest": {"algorithm": "sha256", "value": digest},
        }
        for rel, kind, digest in observed.files
    ]
    payload = EpisodeObservation.digest_payload(spec.type, data, utc_now_iso(), refs)
    envelope = EpisodeObservation.model_validate({**payload, "id": observation_id, "digest": episode_digest(payload)})
    value = envelope.model_dump(mode="json", by_alias=True, exclude_none=True)
    outcome = _outcome(json.dumps(value, sort_keys=True), json_value=value)
    outcome.artifact_refs = [{"path": rel, "kind": kind, "sha256": digest} for rel, kind, digest in observed.files]
    return outcome
