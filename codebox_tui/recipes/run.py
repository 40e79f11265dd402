"""``recipe-run``: provision a sandbox from a validated recipe, run its workflow, produce one bundle.

Order: workspaces (scaffolds / directory copies) and mounts → boot → staged files (recipe-local files copied
into the sandbox) → extra plugins (activated or loaded as mu-plugins) → site seeds → workflow (before, steps,
after; the first failing step stops the run unless it is ``allowFailure``/``advisory``) → probes (each one
step, optionally checked against ``expectJson``; results in ``files/probes.json``) →
``files/run-attestation.json`` → bundle capture (always, also on failure).
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codebox_tui import __version__
from codebox_tui.bundle import checks, layout
from codebox_tui.contracts.canonical import stable_json
from codebox_tui.contracts.recipe import WorkspaceRecipe
from codebox_tui.contracts.runtime import LIVE_MOUNT_KEY, MountSpec, RuntimePolicy
from codebox_tui.errors import BadInputError, CodeboxError, ExitCode
from codebox_tui.jsonargs import resolve_source
from codebox_tui.recipes.plan import extra_plugin_target, policy_hash, workspace_target
from codebox_tui.recipes.scaffolds import write_plugin_scaffold, write_theme_scaffold
from codebox_tui.recipes.seeds import site_seed_php
from codebox_tui.recipes.validate import RecipeValidation, all_steps, resolved_step_args

RUN_SCHEMA = "wp-codebox/recipe-run/v1"
ATTESTATION_SCHEMA = "wp-codebox/run-attestation/v1"
PROBES_SCHEMA = "wp-codebox/recipe-probes/v1"
WP_PREFIX = "<?php require_once '/wordpress/wp-load.php';\n"


def _copy_tree(src: Path, dst: Path, exclude: list[str]) -> None:
    ignore = shutil.ignore_patterns(*exclude) if exclude else None
    shutil.copytree(src, dst, ignore=ignore, symlinks=True)


def prepare_inputs(recipe: WorkspaceRecipe, base_dir: Path, scratch: Path, policy: RuntimePolicy
                   ) -> tuple[list[MountSpec], list[MountSpec], list[dict[str, Any]]]:
    """(user mounts, tool mounts, prepared extra plugins) with workspaces materialised under scratch."""
    mounts = [MountSpec(type=m.type, source=str(resolve_source(base_dir, m.source).resolve()), target=m.target,
                        mode=m.mode, captureArtifacts=m.captureArtifacts,
                        metadata={**m.metadata, **({LIVE_MOUNT_KEY: True} if m.live else {})})
              for m in recipe.inputs.mounts]
    for i, ws in enumerate(recipe.inputs.workspaces):
        seed = ws.seed
        slug = seed.slug or f"workspace-{i}"
        dest = scratch / "workspaces" / f"{i}-{slug}"
        if seed.type == "plugin_scaffold":
            write_plugin_scaffold(dest, slug, seed.name)
        elif seed.type == "theme_scaffold":
            write_theme_scaffold(dest, slug, seed.name)
        else:
            _copy_tree(resolve_source(base_dir, str(seed.source)), dest, seed.excludePaths)
        mounts.append(MountSpec(source=str(dest), target=workspace_target(seed.type, slug, ws.target), mode=ws.mode,
                                metadata={"mountRole": "workspace", "seedType": seed.type, "slug": slug}))
    tools: list[MountSpec] = []
    plugins: list[dict[str, Any]] = []
    for i, plugin in enumerate(recipe.inputs.extra_plugins):
        src = resolve_source(base_dir, plugin.source)
        if src.is_file():  # .zip: unpack into scratch
            out = scratch / "extra" / str(i)
            with zipfile.ZipFile(src) as archive:
                for member in archive.namelist():
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise BadInputError(f"unsafe path {member!r} in {src}", code="invalid-source",
                                            field=f"$.inputs.extra_plugins[{i}].source")
                archive.extractall(out)
            entries = [p for p in out.iterdir()]
            src = entries[0] if len(entries) == 1 and entries[0].is_dir() else out
        slug = plugin.slug or src.name
        target = extra_plugin_target(plugin.loadAs, slug)
        tools.append(MountSpec(source=str(src.resolve()), target=target, mode="readonly", captureArtifacts=False,
                               metadata={"mountRole": "extra-plugin", "slug": slug}))
        main = plugin.pluginFile or _find_plugin_file(src, slug)
        plugins.append({"slug": slug, "loadAs": plugin.loadAs, "activate": plugin.activate, "target": target,
                        "pluginFile": main})
    if "wordpress.phpunit" in policy.commands:
        from codebox_tui.runtime.phpunit import phpunit_tool_mounts

        tools.extend(phpunit_tool_mounts(scratch / "phpunit-bin"))
    return mounts, tools, plugins


def _find_plugin_file(src: Path, slug: str) -> str:
    for php in sorted(src.glob("*.php")):
        head = php.read_text(encoding="utf-8", errors="replace")[:4096]
        if "Plugin Name:" in head:
            return f"{slug}/{php.name}"
    return f"{slug}/{slug}.php"


def _plugin_setup_php(plugins: list[dict[str, Any]]) -> str:
    lines = ["require_once ABSPATH . 'wp-admin/includes/plugin.php'; $out = [];"]
    for p in plugins:
        if p["loadAs"] == "mu-plugin":
            rel = p["pluginFile"].split("/", 1)[1]
            loader = f"<?php require_once __DIR__ . '/codebox-runtime/{p['slug']}/{rel}';\n"
            lines.append(f"file_put_contents(WPMU_PLUGIN_DIR . '/codebox-load-{p['slug']}.php', {json.dumps(loader)});"
                         f" $out[] = ['slug' => {json.dumps(p['slug'])}, 'loaded' => 'mu-plugin'];")
        elif p["activate"]:
            lines.append(f"$r = activate_plugin({json.dumps(p['pluginFile'])}); $out[] = ['slug' => "
                         f"{json.dumps(p['slug'])}, 'active' => !is_wp_error($r), 'error' => is_wp_error($r) ? "
                         "$r->get_error_message() : null];")
    lines.append("echo json_encode($out);")
    return "\n".join(lines)


MAX_STAGED_BYTES = 64 * 1024 * 1024


def staged_file_pairs(recipe: WorkspaceRecipe, base_dir: Path) -> list[tuple[Path, str]]:
    """(host file, sandbox path) for every staged file; directories are expanded file by file."""
    pairs: list[tuple[Path, str]] = []
    total = 0
    for i, staged in enumerate(recipe.inputs.stagedFiles):
        src = resolve_source(base_dir, staged.source)
        target = staged.target.rstrip("/") or "/"
        files = [(src, target)] if src.is_file() else [
            (f, f"{target}/{f.relative_to(src).as_posix()}") for f in sorted(src.rglob("*"))
            if f.is_file() and not f.is_symlink()]
        for f, _t in files:
            total += f.stat().st_size
        if total > MAX_STAGED_BYTES:
            raise BadInputError(f"staged files exceed {MAX_STAGED_BYTES} bytes", code="staged-files-too-large",
                                field=f"$.inputs.stagedFiles[{i}].source")
        pairs.extend(files)
    return pairs


def json_contains(actual: Any, expected: Any) -> bool:
    """True when every key/value of ``expected`` is in ``actual`` (objects recursively; other values equal)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and json_contains(actual[k], v)
                                                for k, v in expected.items())
    return bool(actual == expected)


def last_json(text: str) -> Any:
    """The JSON document a step printed: the whole output, else its last line that parses."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    raise ValueError("no JSON in the output")


def _versions() -> dict[str, Any]:
    out: dict[str, Any] = {"codebox": __version__, "python": sys.version.split()[0], "platform": platform.platform()}
    try:
        from importlib.metadata import version

        out["playwright"] = version("playwright")
    except Exception:
        pass
    return out


def run_recipe(validation: RecipeValidation, base_dir: Path, *, artifacts_dir: Path | None = None,
               recipe_text: str | None = None, on_session: Callable[[Any], None] | None = None,
               cancel: threading.Event | None = None) -> dict[str, Any]:
    """Run a valid recipe in one sandbox and capture one bundle. ``on_session`` gets the RunSession as soon
    as it exists (a viewer tails its events); once ``cancel`` is set no further step or probe starts and the
    run fails with ``cancelled`` (the bundle is still captured)."""
    from codebox_tui.runtime.backend import SandboxSpec
    from codebox_tui.runtime.policy import resolve_secrets
    from codebox_tui.runtime.session import RunSession
    from codebox_tui.settings import get_settings

    recipe, policy = validation.recipe, validation.policy
    if not validation.valid or recipe is None or policy is None:
        raise BadInputError("recipe is not valid; run `codebox recipe validate`", code="invalid-recipe")
    root = artifacts_dir or (resolve_source(base_dir, recipe.artifacts.directory) if recipe.artifacts.directory
                             else None) or get_settings().artifacts_dir
    scratch = Path(tempfile.mkdtemp(prefix="codebox-recipe-"))
    executions: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    advisories: list[dict[str, Any]] = []
    phases: list[dict[str, Any]] = []
    staged_files: list[dict[str, Any]] = []
    probes: list[dict[str, Any]] = []
    try:
        mounts, tools, plugins = prepare_inputs(recipe, base_dir, scratch, policy)
        secrets = resolve_secrets(policy)
        spec = SandboxSpec(mounts=mounts, policy=policy, wp=recipe.runtime.wp, php=recipe.runtime.phpVersion,
                           extra_mounts=tools, secret_env=secrets,
                           env=dict(recipe.inputs.runtimeEnv),
                           metadata={"recipe": validation.recipe_path, **recipe.metadata},
                           boot_timeout_s=(recipe.runtime.bootTimeoutMs or 120_000) / 1000)
        with RunSession(spec, Path(root)) as session:
            if on_session is not None:
                on_session(session)

            def phase(name: str, fn: Any) -> Any:
                t0 = time.monotonic()
                try:
                    data = fn()
                    phases.append({"name": name, "status": "completed",
                                   "durationMs": int((time.monotonic() - t0) * 1000), "data": data})
                    return data
                except Exception as exc:
                    phases.append({"name": name, "status": "failed",
                                   "durationMs": int((time.monotonic() - t0) * 1000), "error": str(exc)})
                    raise

            ok = True
            try:
                phase("runtime_startup", lambda: session.boot_sandbox() and None)
                if recipe.runtime.blueprint:
                    from codebox_tui.recipes.blueprint import blueprint_php

                    code = blueprint_php(recipe.runtime.blueprint)
                    phase("run_blueprint_steps", lambda: _checked_steps(_json_tail(session.sandbox.run_php(
                        WP_PREFIX + code, 120).text)))
                if recipe.inputs.stagedFiles:
                    def stage() -> dict[str, Any]:
                        pairs = staged_file_pairs(recipe, base_dir)
                        for src, target in pairs:
                            session.sandbox.write_file(target, src.read_bytes(), 60.0)
                        return {"files": [{"source": str(src), "target": target, "bytes": src.stat().st_size}
                                          for src, target in pairs]}

                    staged_files = phase("stage_files", stage)["files"]
                if plugins:
                    phase("mount_plugins", lambda: _json_tail(session.sandbox.run_php(
                        WP_PREFIX + _plugin_setup_php(plugins), 120).text))
                for i, seed in enumerate(recipe.inputs.siteSeeds):
                    if seed.type == "fixture" and seed.source:
                        data = json.loads(resolve_source(base_dir, seed.source).read_text(encoding="utf-8"))
                        code = site_seed_php(seed, data)
                        phase(f"site_seed:{seed.name}",
                              lambda code=code: _json_tail(session.sandbox.run_php(WP_PREFIX + code, 120).text))
                    else:
                        phases.append({"name": f"site_seed:{seed.name}", "status": "completed",
                                       "data": {"action": "skipped", "reason": "parent_site seeds are declarations"},
                                       "durationMs": 0})
                    _ = i
            except CodeboxError as exc:
                ok = False
                failures.append({"phase": "setup", "error": exc.to_dict()})
            if ok:
                for step_phase, index, step in all_steps(recipe):
                    if cancel is not None and cancel.is_set():
                        ok = False
                        failures.append({"phase": step_phase, "index": index, "command": step.command,
                                         "error": {"code": "cancelled", "message": "The run was cancelled"}})
                        break
                    timeout = step.timeoutMs / 1000 if step.timeoutMs else None
                    entry: dict[str, Any] = {"phase": step_phase, "index": index, "command": step.command,
                                             **({"allowFailure": True} if step.allowFailure else {})}
                    try:
                        result = session.execute(step.command, resolved_step_args(step, base_dir), timeout_s=timeout)
                        entry.update(exitCode=result.exitCode, executionId=result.id, durationMs=result.durationMs)
                        failed = result.exitCode != 0
                        error: Any = (result.stderr or result.stdout)[-2000:] if failed else None
                    except CodeboxError as exc:
                        failed, error = True, exc.to_dict()
                        entry.update(exitCode=int(exc.exit_code), error=error)
                    executions.append(entry)
                    if failed:
                        record = {"phase": step_phase, "index": index, "command": step.command, "error": error}
                        if step.advisory:
                            advisories.append({"schema": "wp-codebox/recipe-advisory-failure/v1", **record})
                        elif not step.allowFailure:
                            failures.append(record)
                            break
            if ok and recipe.probes:
                t0 = time.monotonic()
                for probe in recipe.probes:
                    probes.append(checks.with_message(_run_probe(session, probe, base_dir)))
                failed_probes = checks.failed_probes(probes)  # name, expected and actual JSON, message
                failures.extend(failed_probes)
                phases.append({"name": "run_probes", "status": "failed" if failed_probes else "completed",
                               "durationMs": int((time.monotonic() - t0) * 1000),
                               "data": {"probes": len(probes), "failed": len(failed_probes)}})
                path = session.add_evidence(layout.PROBES, "probe-results", "application/json")
                path.write_text(session.redact(json.dumps({"schema": PROBES_SCHEMA, "probes": probes}, indent=2,
                                                          default=str)) + "\n", encoding="utf-8")
            declared: list[dict[str, Any]] = []
            if ok and recipe.artifacts.paths:
                t0 = time.monotonic()
                for art in recipe.artifacts.paths:
                    entry_d = _collect_declared(session, art)
                    declared.append(entry_d)
                    if entry_d["status"] != "collected" and art.required:
                        failures.append({"phase": "collect_artifacts", "artifact": art.name,
                                         "error": entry_d.get("error", "missing")})
                phases.append({"name": "collect_artifacts", "status": "completed",
                               "durationMs": int((time.monotonic() - t0) * 1000),
                               "data": {"declaredArtifacts": declared}})
            attestation = {
                "schema": ATTESTATION_SCHEMA,
                "recipe": {"path": validation.recipe_path,
                           "sha256": hashlib.sha256((recipe_text or stable_json(recipe.model_dump(
                               mode="json", by_alias=True))).encode("utf-8")).hexdigest()},
                "versions": {**_versions(), "wordpress": recipe.runtime.wp, "php": recipe.runtime.phpVersion},
                "policy": {"hash": policy_hash(policy), "commands": policy.commands, "network": policy.network
                           if isinstance(policy.network, str) else "allow-hosts"},
                "secrets": [{"name": n, "provided": n in secrets, "value": "[REDACTED]"}
                            for n in recipe.inputs.secretEnv],
                "runtimeId": session.runtime_id,
                "phases": phases,
                "executions": executions,
                "stepFailures": failures,
                "advisoryFailures": advisories,
                "stagedFiles": staged_files,
                "probes": probes,
                "declaredArtifacts": declared,
            }
            path = session.add_evidence(layout.RUN_ATTESTATION, "run-attestation", "application/json")
            path.write_text(session.redact(json.dumps(attestation, indent=2, default=str)) + "\n", encoding="utf-8")
            summary = session.capture()
            if recipe.artifacts.verify is True and summary is not None:
                summary, problem = _verify_and_reseal(session, summary)
                if problem is not None:
                    failures.append(problem)
            run_dir = session.run_dir
        bundle_dir = getattr(summary, "path", None)
        verdict = checks.recipe_verdict(failures, advisories, probes, executions)  # bundle/checks.py
        return {
            "schema": RUN_SCHEMA, "success": verdict.passed, "status": verdict.status,
            "failures": verdict.failures, "warnings": verdict.warnings,
            "recipePath": validation.recipe_path, "runtimeId": attestation["runtimeId"], "runDir": str(run_dir),
            "bundleDir": str(bundle_dir) if bundle_dir else str(run_dir), "bundleId": getattr(summary, "id", None),
            "executions": executions, "stepFailures": failures, "advisoryFailures": advisories,
            "phaseEvidence": phases, "stagedFiles": staged_files, "probes": probes,
            "declaredArtifacts": attestation["declaredArtifacts"],
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


MAX_DECLARED_BYTES = 16 * 1024 * 1024
VERIFICATION_EVIDENCE = layout.VERIFICATION_EVIDENCE


def _verify_and_reseal(session: Any, summary: Any) -> tuple[Any, dict[str, Any] | None]:
    """Recipe ``artifacts.verify``: verify the captured bundle, keep the result as evidence and seal the
    bundle again with it listed (as the reference does, the file records the verification of the bundle
    before this file was added, so its id differs from the final one). An invalid bundle fails the run."""
    from codebox_tui.bundle.seal import append_and_reseal
    from codebox_tui.bundle.verify import verify_bundle

    result = verify_bundle(summary.path)
    path = session.add_evidence(VERIFICATION_EVIDENCE, "artifact-bundle-verification", "application/json")
    doc = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    doc["verifiedBundleId"] = summary.id
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    problem = None
    if not result.valid:
        codes = ", ".join(sorted({v.code for v in result.violations}))
        problem = {"phase": "verify_bundle", "error": {
            "code": "bundle-verification-failed", "evidence": VERIFICATION_EVIDENCE,
            "message": f"The captured bundle failed verification ({codes})"}}
    # only the id-bearing documents and the manifest are rewritten (no second capture)
    return append_and_reseal(summary.path, [session.evidence[-1]]), problem


def _collect_declared(session: Any, art: Any) -> dict[str, Any]:
    """Copy one declared sandbox file into ``files/declared/<name>`` (absent files are recorded, not copied)."""
    import base64
    import re as _re

    out: dict[str, Any] = {"name": art.name, "path": art.path, "required": art.required}
    code = (f"<?php $p = {json.dumps(art.path)}; if (!is_file($p)) {{ echo json_encode(['exists' => false]); }}"
            f" elseif (filesize($p) > {MAX_DECLARED_BYTES}) {{ echo json_encode(['exists' => true, 'size' => "
            "filesize($p)]); } else { echo json_encode(['exists' => true, 'size' => filesize($p), "
            "'b64' => base64_encode(file_get_contents($p))]); }")
    try:
        found = _json_tail(session.sandbox.run_php(code, 120).text)
    except CodeboxError as exc:
        return {**out, "status": "error", "error": exc.message}
    if not found.get("exists"):
        return {**out, "status": "missing", "error": f"{art.path} does not exist in the sandbox"}
    if "b64" not in found:
        return {**out, "status": "too-large", "error": f"{art.path} is larger than {MAX_DECLARED_BYTES} bytes"}
    safe = _re.sub(r"[^A-Za-z0-9_.-]+", "-", art.name).strip(".-") or "artifact"
    rel = layout.declared_path(safe)
    data = base64.b64decode(found["b64"])
    target = session.add_evidence(rel, "declared-artifact", "application/octet-stream")
    try:
        target.write_text(session.redact(data.decode("utf-8")), encoding="utf-8")
    except UnicodeDecodeError:
        target.write_bytes(data)
    return {**out, "status": "collected", "bundlePath": rel, "bytes": len(data)}


def _run_probe(session: Any, probe: Any, base_dir: Path) -> dict[str, Any]:
    """Run one probe step; passed when it exits 0 and (if set) its JSON output contains ``expectJson``."""
    step = probe.step
    out: dict[str, Any] = {"name": probe.name, "command": step.command, "allowFailure": probe.allowFailure,
                           "metadata": probe.metadata,
                           **({"expectJson": probe.expectJson} if probe.expectJson is not None else {})}
    try:
        result = session.execute(step.command, resolved_step_args(step, base_dir),
                                 timeout_s=step.timeoutMs / 1000 if step.timeoutMs else None)
    except CodeboxError as exc:
        return {**out, "status": "failed", "error": exc.to_dict()}
    out.update(exitCode=result.exitCode, executionId=result.id, durationMs=result.durationMs)
    if result.exitCode != 0:
        return {**out, "status": "failed", "error": (result.stderr or result.stdout)[-2000:]}
    if probe.expectJson is not None:
        try:
            envelope = result.result.json_ if result.result is not None else None
            actual = envelope if envelope is not None else last_json(result.stdout)
        except ValueError:
            return {**out, "status": "failed", "actualOutput": result.stdout[-2000:],
                    "error": "expectJson is set but the probe printed no JSON"}
        out["actualJson"] = actual
        if not json_contains(actual, probe.expectJson):
            return {**out, "status": "failed", "error": "the probe's JSON does not contain expectJson"}
    return {**out, "status": "passed"}


def _checked_steps(report: Any) -> dict[str, Any]:
    failed = [r for r in report if isinstance(r, dict) and r.get("ok") is False] if isinstance(report, list) else []
    if failed:
        first = failed[0]
        raise SetupFailedError(f"blueprint step {first.get('index')} ({first.get('step')}) failed"
                               + (f": {first['error']}" if first.get("error") else ""), code="blueprint-step-failed")
    return {"steps": report}


def _json_tail(text: str) -> Any:
    line = text.strip().splitlines()[-1] if text.strip() else ""
    try:
        return json.loads(line)
    except ValueError as exc:
        raise SetupFailedError(f"setup PHP failed: {text.strip()[-1000:]}", code="recipe-setup-failed") from exc


class SetupFailedError(CodeboxError):
    exit_code = ExitCode.SANDBOX_FAILURE
