"""``recipe-run``: provision a sandbox from a validated recipe, run its workflow, produce one bundle.

Order: workspaces (scaffolds / directory copies) and mounts → boot → staged files (recipe-local files copied
into the sandbox) → extra plugins (activated or loaded as mu-plugins) → site seeds → workflow (before, steps,
after; the first failing step stops the run unless it is ``allowFailure``/``advisory``) → probes (each one
step, optionally checked against ``expectJson``; results in ``files/probes.json``) →
``files/run-attestation.json`` → bundle capture (always, also on failure). The sandbox, its tools, capture,
sealing and the review inbox are the run lifecycle's (``lifecycle/service.py``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import platform
import re
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from codebox_tui import __version__
from codebox_tui.bundle import checks, layout
from codebox_tui.contracts.canonical import stable_json
from codebox_tui.contracts.recipe import WorkspaceRecipe
from codebox_tui.contracts.runtime import LIVE_MOUNT_KEY, MountSpec, RuntimePolicy
from codebox_tui.errors import BadInputError, CodeboxError, ExitCode
from codebox_tui.jsonargs import resolve_source
from codebox_tui.lifecycle import CommandStep, OpenRun, ProgressListener, RunControl, RunRequest, RunService
from codebox_tui.lifecycle.request import public_url_from_text
from codebox_tui.lifecycle.site_state import unclean_text
from codebox_tui.recipes.blueprint import blueprint_file_writes, blueprint_php, reviewed_code_ran, runs_php
from codebox_tui.recipes.plan import extra_plugin_load_as, extra_plugin_target, policy_hash, workspace_target
from codebox_tui.recipes.scaffolds import write_plugin_scaffold, write_theme_scaffold
from codebox_tui.recipes.seeds import site_seed_php
from codebox_tui.recipes.validate import RecipeValidation, all_steps, preview_hold_seconds, resolved_step_args
from codebox_tui.runtime.backends import chosen_backend
from codebox_tui.runtime.catalog import get_command, parse_args
from codebox_tui.runtime.core_checkout import core_checkout_mounts
from codebox_tui.runtime.mounts import mu_plugin_loader
from codebox_tui.settings import get_settings

RUN_SCHEMA = "wp-codebox/recipe-run/v1"
ATTESTATION_SCHEMA = "wp-codebox/run-attestation/v1"
PROBES_SCHEMA = "wp-codebox/recipe-probes/v1"
WP_PREFIX = "<?php require_once '/wordpress/wp-load.php';\n"


def _copy_tree(src: Path, dst: Path, exclude: list[str]) -> None:
    ignore = shutil.ignore_patterns(*exclude) if exclude else None
    shutil.copytree(src, dst, ignore=ignore, symlinks=True)


def prepare_inputs(
    recipe: WorkspaceRecipe, base_dir: Path, scratch: Path, policy: RuntimePolicy
) -> tuple[list[MountSpec], list[MountSpec], list[dict[str, Any]]]:
    """(user mounts, extra-plugin mounts, prepared extra plugins) with workspaces materialised under scratch.
    The tools the recipe's commands need (PHPUnit, wp-cli) are the run lifecycle's (lifecycle/tools.py)."""
    mounts = [
        MountSpec(
            type=m.type,
            source=str(resolve_source(base_dir, m.source).resolve()),
            target=m.target,
            mode=m.mode,
            captureArtifacts=m.captureArtifacts,
            metadata={**m.metadata, **({LIVE_MOUNT_KEY: True} if m.live else {})},
        )
        for m in recipe.inputs.mounts
    ]
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
        mounts.append(
            MountSpec(
                source=str(dest),
                target=workspace_target(seed.type, slug, ws.target),
                mode=ws.mode,
                metadata={"mountRole": "workspace", "seedType": seed.type, "slug": slug},
            )
        )
    tools: list[MountSpec] = []
    plugins: list[dict[str, Any]] = []
    for i, plugin in enumerate(recipe.inputs.extra_plugins):
        src = resolve_source(base_dir, plugin.source)
        load_as, single = extra_plugin_load_as(plugin), None
        if src.is_file() and src.suffix == ".php":  # a single-file must-use plugin, in a folder of its own
            folder = scratch / "extra" / str(i) / (plugin.slug or src.stem)
            folder.mkdir(parents=True)
            shutil.copyfile(src, folder / src.name)
            src, single = folder, src.name
        elif src.is_file():  # .zip: unpack into scratch
            out = scratch / "extra" / str(i)
            with zipfile.ZipFile(src) as archive:
                for member in archive.namelist():
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise BadInputError(
                            f"unsafe path {member!r} in {src}",
                            code="invalid-source",
                            field=f"$.inputs.extra_plugins[{i}].source",
                        )
                archive.extractall(out)
            entries = [p for p in out.iterdir()]
            src = entries[0] if len(entries) == 1 and entries[0].is_dir() else out
        slug = plugin.slug or src.name
        target = extra_plugin_target(load_as, slug)
        tools.append(
            MountSpec(
                source=str(src.resolve()),
                target=target,
                mode="readonly",
                captureArtifacts=False,
                metadata={"mountRole": "extra-plugin", "slug": slug},
            )
        )
        main = plugin.pluginFile or (f"{slug}/{single}" if single else _find_plugin_file(src, slug))
        plugins.append(
            {"slug": slug, "loadAs": load_as, "activate": plugin.activate, "target": target, "pluginFile": main}
        )
    return mounts, tools, plugins


def _find_plugin_file(src: Path, slug: str) -> str:
    for php in sorted(src.glob("*.php")):
        head = php.read_text(encoding="utf-8", errors="replace")[:4096]
        if "Plugin Name:" in head:
            return f"{slug}/{php.name}"
    return f"{slug}/{slug}.php"


def mu_plugin_loaders(plugins: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """(sandbox path, bytes) of the loader Codebox writes for each extra plugin loaded as a must-use plugin: a
    file in mu-plugins/ that requires the plugin's main file from its read-only mount."""
    out = []
    for p in plugins:
        if p["loadAs"] == "mu-plugin":
            path, loader = mu_plugin_loader(p["slug"], p["pluginFile"].split("/", 1)[1])
            out.append((path, loader.encode("utf-8")))
    return out


def _plugin_setup_php(plugins: list[dict[str, Any]]) -> str:
    lines = ["require_once ABSPATH . 'wp-admin/includes/plugin.php'; $out = [];"]
    for p in plugins:
        if p["loadAs"] == "mu-plugin":  # its loader is written from the host (_RecipeRun.setup)
            lines.append(f"$out[] = ['slug' => {json.dumps(p['slug'])}, 'loaded' => 'mu-plugin'];")
        elif p["activate"]:
            lines.append(
                f"$r = activate_plugin({json.dumps(p['pluginFile'])}); $out[] = ['slug' => "
                f"{json.dumps(p['slug'])}, 'active' => !is_wp_error($r), 'error' => is_wp_error($r) ? "
                "$r->get_error_message() : null];"
            )
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
        files = (
            [(src, target)]
            if src.is_file()
            else [
                (f, f"{target}/{f.relative_to(src).as_posix()}")
                for f in sorted(src.rglob("*"))
                if f.is_file() and not f.is_symlink()
            ]
        )
        for f, _t in files:
            total += f.stat().st_size
        if total > MAX_STAGED_BYTES:
            raise BadInputError(
                f"staged files exceed {MAX_STAGED_BYTES} bytes",
                code="staged-files-too-large",
                field=f"$.inputs.stagedFiles[{i}].source",
            )
        pairs.extend(files)
    return pairs


def json_contains(actual: Any, expected: Any) -> bool:
    """True when every key/value of ``expected`` is in ``actual`` (objects recursively; other values equal)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and json_contains(actual[k], v) for k, v in expected.items()
        )
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
        out["playwright"] = version("playwright")
    except Exception:
        pass
    return out


class _RecipeRun:
    """The bookkeeping of one recipe run: what each phase, step and probe did (the attestation's lists)."""

    def __init__(self, run: OpenRun, recipe: WorkspaceRecipe, base_dir: Path, cancel: threading.Event | None) -> None:
        self.run, self.session, self.recipe, self.base_dir = run, run.session, recipe, base_dir
        self.cancel = cancel
        self.executions: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        self.advisories: list[dict[str, Any]] = []
        self.phases: list[dict[str, Any]] = []
        self.staged_files: list[dict[str, Any]] = []
        self.probes: list[dict[str, Any]] = []
        self.declared: list[dict[str, Any]] = []

    @property
    def cancelled(self) -> bool:
        return self.run.cancelled or (self.cancel is not None and self.cancel.is_set())

    def phase(self, name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.monotonic()
        try:
            data = fn()
        except Exception as exc:
            self.phases.append(
                {"name": name, "status": "failed", "durationMs": int((time.monotonic() - t0) * 1000), "error": str(exc)}
            )
            raise
        self.phases.append(
            {"name": name, "status": "completed", "durationMs": int((time.monotonic() - t0) * 1000), "data": data}
        )
        return data

    def _php_phase(self, name: str, code: str, check: Callable[[Any], Any] | None = None) -> Any:
        def go() -> Any:
            value = _json_tail(self.session.sandbox.run_php(WP_PREFIX + code, 120).text)
            return check(value) if check is not None else value

        return self.phase(name, go)

    def setup(self, plugins: list[dict[str, Any]]) -> bool:
        """Boot, blueprint steps, staged files, extra plugins, site seeds; False (recorded) when one fails."""
        recipe, base_dir = self.recipe, self.base_dir
        try:
            self.phase("runtime_startup", lambda: self.run.boot() and None)
            site_state = self.run.site_state
            if recipe.runtime.blueprint:
                apply_blueprint(self.run, recipe.runtime.blueprint, self._php_phase)
            if recipe.inputs.stagedFiles:
                self.staged_files = self.phase("stage_files", self._stage)["files"]
            if plugins:
                for path, data in mu_plugin_loaders(plugins):
                    site_state.write_setup_file(path, data, "mount_plugins")
                self._php_phase("mount_plugins", _plugin_setup_php(plugins))
            for seed in recipe.inputs.siteSeeds:
                if seed.type == "fixture" and seed.source:
                    data = json.loads(resolve_source(base_dir, seed.source).read_text(encoding="utf-8"))
                    self._php_phase(f"site_seed:{seed.name}", site_seed_php(seed, data))
                else:
                    self.phases.append(
                        {
                            "name": f"site_seed:{seed.name}",
                            "status": "completed",
                            "durationMs": 0,
                            "data": {"action": "skipped", "reason": "parent_site seeds are declarations"},
                        }
                    )
            # the setup's own writes under wp-content are declared input (docs/site-state.md)
            site_state.rebase_files()
        except CodeboxError as exc:
            self.failures.append({"phase": "setup", "error": exc.to_dict()})
            return False
        return True

    def _stage(self) -> dict[str, Any]:
        pairs = staged_file_pairs(self.recipe, self.base_dir)
        for src, target in pairs:
            self.run.site_state.write_setup_file(target, src.read_bytes(), "stage_files")
        return {"files": [{"source": str(src), "target": target, "bytes": src.stat().st_size} for src, target in pairs]}

    def steps(self) -> bool:
        """The workflow (before, steps, after); the first failing step stops it unless it is allowFailure or
        advisory; a cancel stops it before the next step. False when the run failed here."""
        for step_phase, index, step in all_steps(self.recipe):
            if self.cancelled:
                self.failures.append(
                    {
                        "phase": step_phase,
                        "index": index,
                        "command": step.command,
                        "error": {"code": "cancelled", "message": "The run was cancelled"},
                    }
                )
                return False
            entry: dict[str, Any] = {
                "phase": step_phase,
                "index": index,
                "command": step.command,
                **({"allowFailure": True} if step.allowFailure else {}),
            }
            try:
                result = self.run.execute(
                    CommandStep(
                        step.command,
                        resolved_step_args(step, self.base_dir),
                        step.timeoutMs / 1000 if step.timeoutMs else None,
                    )
                )
                entry.update(exitCode=result.exitCode, executionId=result.id, durationMs=result.durationMs)
                failed = result.exitCode != 0
                error: Any = (result.stderr or result.stdout)[-2000:] if failed else None
            except CodeboxError as exc:
                failed, error = True, exc.to_dict()
                entry.update(exitCode=int(exc.exit_code), error=error)
            self.executions.append(entry)
            if failed:
                record = {"phase": step_phase, "index": index, "command": step.command, "error": error}
                if step.advisory:
                    self.advisories.append({"schema": "wp-codebox/recipe-advisory-failure/v1", **record})
                elif not step.allowFailure:
                    self.failures.append(record)
                    return True
        return True

    def run_probes(self) -> None:
        t0 = time.monotonic()
        for probe in self.recipe.probes:
            self.probes.append(checks.with_message(_run_probe(self.session, probe, self.base_dir)))
        failed_probes = checks.failed_probes(self.probes)  # name, expected and actual JSON, message
        self.failures.extend(failed_probes)
        self.phases.append(
            {
                "name": "run_probes",
                "status": "failed" if failed_probes else "completed",
                "durationMs": int((time.monotonic() - t0) * 1000),
                "data": {"probes": len(self.probes), "failed": len(failed_probes)},
            }
        )
        path = self.session.add_evidence(layout.PROBES, "probe-results", "application/json")
        path.write_text(
            self.session.redact(json.dumps({"schema": PROBES_SCHEMA, "probes": self.probes}, indent=2, default=str))
            + "\n",
            encoding="utf-8",
        )

    def collect_declared(self) -> None:
        t0 = time.monotonic()
        for art in self.recipe.artifacts.paths:
            entry = _collect_declared(self.session, art)
            self.declared.append(entry)
            if entry["status"] != "collected" and art.required:
                self.failures.append(
                    {"phase": "collect_artifacts", "artifact": art.name, "error": entry.get("error", "missing")}
                )
        self.phases.append(
            {
                "name": "collect_artifacts",
                "status": "completed",
                "durationMs": int((time.monotonic() - t0) * 1000),
                "data": {"declaredArtifacts": self.declared},
            }
        )

    def attest(self, validation: RecipeValidation, policy: RuntimePolicy, recipe_text: str | None) -> None:
        recipe = self.recipe
        secrets = self.session.spec.secret_env
        attestation = {
            "schema": ATTESTATION_SCHEMA,
            "kind": recipe.kind,
            "recipe": {
                "path": validation.recipe_path,
                "sha256": hashlib.sha256(
                    (recipe_text or stable_json(recipe.model_dump(mode="json", by_alias=True))).encode("utf-8")
                ).hexdigest(),
            },
            "versions": {**_versions(), "wordpress": recipe.runtime.wp, "php": self.session.spec.php},
            "policy": {
                "hash": policy_hash(policy),
                "commands": policy.commands,
                "network": policy.network if isinstance(policy.network, str) else "allow-hosts",
            },
            "secrets": [{"name": n, "provided": n in secrets, "value": "[REDACTED]"} for n in recipe.inputs.secretEnv],
            "runtimeId": self.session.runtime_id,
            "phases": self.phases,
            "executions": self.executions,
            "stepFailures": self.failures,
            "advisoryFailures": self.advisories,
            "stagedFiles": self.staged_files,
            "probes": self.probes,
            "declaredArtifacts": self.declared,
        }
        path = self.session.add_evidence(layout.RUN_ATTESTATION, "run-attestation", "application/json")
        path.write_text(self.session.redact(json.dumps(attestation, indent=2, default=str)) + "\n", encoding="utf-8")


def recipe_request(
    validation: RecipeValidation,
    base_dir: Path,
    scratch: Path,
    *,
    artifacts_dir: Path | None = None,
    backend: str | None = None,
) -> tuple[RunRequest, list[dict[str, Any]]]:
    """The run a valid recipe asks for (its workspaces made under ``scratch``) and its extra plugins, on
    ``backend`` (``--backend``) when given, else the recipe's ``runtime.backend``, else ``CODEBOX_BACKEND``."""
    recipe, policy = validation.recipe, validation.policy
    if not validation.valid or recipe is None or policy is None:
        first = (
            f" (first of {len(validation.issues)}: {validation.issues[0].path}: {validation.issues[0].message})"
            if validation.issues
            else ""
        )
        raise BadInputError(
            f"recipe {validation.recipe_path} is not valid{first}; run `codebox recipe validate`",
            code="invalid-recipe",
            field=validation.issues[0].path if validation.issues else None,
        )
    root = (
        artifacts_dir
        or (resolve_source(base_dir, recipe.artifacts.directory) if recipe.artifacts.directory else None)
        or get_settings().artifacts_dir
    )
    mounts, plugin_mounts, plugins = prepare_inputs(recipe, base_dir, scratch, policy)
    request = RunRequest(
        mounts=mounts,
        policy=policy,
        wp=recipe.runtime.wp,
        php=recipe.runtime.phpVersion,
        backend=chosen_backend(backend, recipe.runtime.backend),
        extra_mounts=[
            *plugin_mounts,
            *core_checkout_mounts(
                [(step.command, parse_args(get_command(step.command), step.args)) for _, _, step in all_steps(recipe)],
                base_dir,
            ),
        ],
        env=dict(recipe.inputs.runtimeEnv),
        metadata={"recipe": validation.recipe_path, **recipe.metadata},
        boot_timeout_s=(recipe.runtime.bootTimeoutMs or 120_000) / 1000,
        artifacts_root=Path(root),
        flow="recipe-run",
    )
    preview = recipe.runtime.preview
    if preview is not None:  # recipe-run's --preview-* options, applied after this, win over these
        request.hold_s = preview_hold_seconds(preview.hold)
        request.preview_port = preview.port
        request.public_url = public_url_from_text(preview.publicUrl)
    return request, plugins


def run_recipe(
    validation: RecipeValidation,
    base_dir: Path,
    *,
    artifacts_dir: Path | None = None,
    recipe_text: str | None = None,
    on_session: Callable[[Any], None] | None = None,
    cancel: threading.Event | None = None,
    control: RunControl | None = None,
    progress: ProgressListener | None = None,
    backend: str | None = None,
    preview: Callable[[RunRequest], None] | None = None,
    on_held: Callable[[OpenRun], None] | None = None,
) -> dict[str, Any]:
    """Run a valid recipe in one sandbox through the run lifecycle (``lifecycle/service.py``: tools, capture,
    sealing, the review inbox) and capture one bundle. ``on_session`` gets the RunSession as soon as it
    exists (a viewer tails its events); once ``cancel`` is set (or ``control`` cancelled) no further step or
    probe starts and the run fails with ``cancelled`` (the bundle is still captured). ``preview`` fills in the
    request's held preview (``recipe-run --preview-hold``): the site is then held after the probes and artifacts,
    before capture, and ``on_held`` is called once it is."""
    scratch = Path(tempfile.mkdtemp(prefix="codebox-recipe-"))
    try:
        request, plugins = recipe_request(validation, base_dir, scratch, artifacts_dir=artifacts_dir, backend=backend)
        if preview is not None:
            preview(request)
        recipe, policy = validation.recipe, validation.policy
        assert recipe is not None and policy is not None  # recipe_request checked
        with RunService().open(request, progress=progress, control=control) as run:
            if on_session is not None:
                on_session(run.session)
            state = _RecipeRun(run, recipe, base_dir, cancel)
            ok = state.setup(plugins) and state.steps()  # a failed step still lets probes and artifacts run
            if ok and recipe.probes:
                state.run_probes()
            if ok and recipe.artifacts.paths:
                state.collect_declared()
            if request.hold_s and not state.cancelled:
                run.hold(request.hold_s, on_held=(lambda: on_held(run)) if on_held is not None else None)
            state.attest(validation, policy, recipe_text)
            summary = run.capture(verify=recipe.artifacts.verify is True)
            if run.verification_problem is not None:
                state.failures.append(run.verification_problem)
            site_risks = unclean_text(run.site_state.diff)
            if site_risks:  # the site's state unknown, or a control file the code under review changed
                state.failures.append(
                    {
                        "phase": "site-state",
                        "error": "site-state risks that keep the verdict from being clean: " + site_risks,
                    }
                )
            verdict = checks.recipe_verdict(
                state.failures,
                state.advisories,
                state.probes,
                state.executions,
                reproduction=recipe.kind == "reproduction",
            )
            if not verdict.passed:
                run.status = "failed"
        bundle_dir = getattr(summary, "path", None)
        return {
            "schema": RUN_SCHEMA,
            "success": verdict.passed,
            "status": verdict.status,
            "failures": verdict.failures,
            "warnings": verdict.warnings,
            "recipePath": validation.recipe_path,
            "runtimeId": run.session.runtime_id,
            "runDir": str(run.session.run_dir),
            "bundleDir": str(bundle_dir or run.session.run_dir),
            "bundleId": getattr(summary, "id", None),
            "executions": state.executions,
            "stepFailures": state.failures,
            "advisoryFailures": state.advisories,
            "phaseEvidence": state.phases,
            "stagedFiles": state.staged_files,
            "probes": state.probes,
            "declaredArtifacts": state.declared,
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


MAX_DECLARED_BYTES = 16 * 1024 * 1024


def _collect_declared(session: Any, art: Any) -> dict[str, Any]:
    """Copy one declared sandbox file into ``files/declared/<name>`` (absent files are recorded, not copied)."""
    out: dict[str, Any] = {"name": art.name, "path": art.path, "required": art.required}
    code = (
        f"<?php $p = {json.dumps(art.path)}; if (!is_file($p)) {{ echo json_encode(['exists' => false]); }}"
        f" elseif (filesize($p) > {MAX_DECLARED_BYTES}) {{ echo json_encode(['exists' => true, 'size' => "
        "filesize($p)]); } else { echo json_encode(['exists' => true, 'size' => filesize($p), "
        "'b64' => base64_encode(file_get_contents($p))]); }"
    )
    try:  # a probe: no file the sandbox planted runs in it and rewrites what it reads (docs/security.md)
        found = _json_tail(session.sandbox.probe_php(code, 120).text)
    except CodeboxError as exc:
        return {**out, "status": "error", "error": exc.message}
    if not found.get("exists"):
        return {**out, "status": "missing", "error": f"{art.path} does not exist in the sandbox"}
    if "b64" not in found:
        return {**out, "status": "too-large", "error": f"{art.path} is larger than {MAX_DECLARED_BYTES} bytes"}
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", art.name).strip(".-") or "artifact"
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
    out: dict[str, Any] = {
        "name": probe.name,
        "command": step.command,
        "allowFailure": probe.allowFailure,
        "metadata": probe.metadata,
        **({"expectJson": probe.expectJson} if probe.expectJson is not None else {}),
    }
    try:
        result = session.execute(
            step.command,
            resolved_step_args(step, base_dir),
            timeout_s=step.timeoutMs / 1000 if step.timeoutMs else None,
        )
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
            return {
                **out,
                "status": "failed",
                "actualOutput": result.stdout[-2000:],
                "error": "expectJson is set but the probe printed no JSON",
            }
        out["actualJson"] = actual
        if not json_contains(actual, probe.expectJson):
            return {**out, "status": "failed", "error": "the probe's JSON does not contain expectJson"}
    return {**out, "status": "passed"}


PhpPhase = Callable[[str, str, Callable[[Any], Any]], Any]


def apply_blueprint(run: OpenRun, blueprint: dict[str, Any], php_phase: PhpPhase | None = None) -> Any:
    """Apply a blueprint's steps to the booted sandbox in one PHP request (phase ``run_blueprint_steps``) as the
    run's declared set-up: its ``writeFile``s and, when it runs PHP, whatever it wrote, are attributed to the
    set-up in the site-state diff (docs/site-state.md, "Attribution"). ``php_phase(name, code, check)`` runs the
    PHP (a recipe records it as a phase); by default it just runs it. A failed step raises ``SetupFailedError``."""

    def run_php(_name: str, code: str, check: Callable[[Any], Any]) -> Any:
        return check(_json_tail(run.sandbox.run_php(WP_PREFIX + code, 120).text))

    site_state = run.site_state
    for path, data in blueprint_file_writes(blueprint):
        site_state.declare_setup_write(path, data, "run_blueprint_steps")
    report = (php_phase or run_php)("run_blueprint_steps", blueprint_php(blueprint), _checked_steps)
    if runs_php(blueprint):  # its writes are the set-up's (docs/site-state.md)
        spec = run.session.spec
        site_state.attribute_setup_phase(
            "run_blueprint_steps", reviewed_code_ran(blueprint, [m.target for m in [*spec.mounts, *spec.extra_mounts]])
        )
    return report


def _checked_steps(report: Any) -> dict[str, Any]:
    failed = [r for r in report if isinstance(r, dict) and r.get("ok") is False] if isinstance(report, list) else []
    if failed:
        first = failed[0]
        raise SetupFailedError(
            f"blueprint step {first.get('index')} ({first.get('step')}) failed"
            + (f": {first['error']}" if first.get("error") else ""),
            code="blueprint-step-failed",
        )
    return {"steps": report}


def _json_tail(text: str) -> Any:
    line = text.strip().splitlines()[-1] if text.strip() else ""
    try:
        return json.loads(line)
    except ValueError as exc:
        raise SetupFailedError(f"setup PHP failed: {text.strip()[-1000:]}", code="recipe-setup-failed") from exc


class SetupFailedError(CodeboxError):
    exit_code = ExitCode.SANDBOX_FAILURE
