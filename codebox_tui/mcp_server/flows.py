"""The MCP tools for the shell and the flows (docs/mcp.md): ``execute``, ``evaluate_patch``, ``recipe_run``,
``episode_run`` and ``batch``, as plain functions of their input models. No MCP types here (``server.py``
turns these into tools).

Each goes through the code its CLI command uses: ``execute`` through the run lifecycle and
:func:`~codebox_tui.runtime.exec.run_exec` (a fresh sandbox) or :func:`~codebox_tui.runtime.exec_server.exec_on_held`
(a held one), ``evaluate_patch`` through :mod:`codebox_tui.recipes.evaluate_patch`, ``recipe_run`` through
:func:`~codebox_tui.recipes.run.run_recipe`, ``episode_run`` through :func:`~codebox_tui.lifecycle.episode.run_plan`.
``batch`` runs ``codebox batch --json`` as a child process: its private local Ray instance is confined to a
loopback-only network, which Linux allows only to a single-threaded process, and this server is not one
(docs/scale-out.md, "The local instance").
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from codebox_tui.batch import parse_batch_file
from codebox_tui.bundle.summary import digest_b
from codebox_tui.contracts.exec import EXEC_DENIAL_CODES, ExecLimits, ExecRequest, ExecResult
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError, ExitCode, PolicyDeniedError, SandboxError
from codebox_tui.lifecycle import (
    ProgressListener,
    RunControl,
    RunRequest,
    RunService,
    Toolchain,
    env_from_pairs,
    mounts_from_text,
)
from codebox_tui.lifecycle.episode import episode_run_output, load_plan, run_plan
from codebox_tui.mcp_server.models import (
    BatchInput,
    BundleRef,
    EpisodeRunInput,
    EvaluatePatchInput,
    ExecuteInput,
    ExecuteResult,
    FlowResult,
    RecipeRunInput,
)
from codebox_tui.recipes.evaluate_patch import check_bench_paths
from codebox_tui.recipes.evaluate_patch import evaluate_patch as run_evaluation
from codebox_tui.recipes.evaluate_range import evaluate_git_range
from codebox_tui.recipes.run import run_recipe
from codebox_tui.recipes.validate import validate_recipe_file
from codebox_tui.runtime.exec import check_before_boot, parse_capabilities, run_exec
from codebox_tui.runtime.exec_server import exec_on_held
from codebox_tui.runtime.wordpress_builds import resolve_build
from codebox_tui.settings import get_settings
from store.db import Store

# the arguments of ``execute`` that describe a fresh sandbox, with their defaults (refused with ``sandbox``)
_FRESH_ONLY = ("mounts", "env", "artifacts", "wp_cli_phar", "wp", "php", "backend", "boot_timeout")
# a held sandbox's answer waits this long beyond the command's own limit (the interpreter stops itself first)
HELD_ANSWER_GRACE_S = 60.0


def _path(text: str, field: str, *, what: str, folder: bool = False) -> Path:
    path = Path(text).expanduser()
    if not (path.is_dir() if folder else path.is_file()):
        raise BadInputError(f"{text} is not {what}", code="path-missing", field=field)
    return path.resolve()


def _artifacts(text: str | None) -> Path | None:
    return Path(text).expanduser() if text else None


def bundle_ref(bundle_dir: str | Path | None, bundle_id: str | None = None, inbox_key: int | None = None) -> BundleRef:
    """Where a flow's bundle landed: its folder, the content digest decisions bind to, its inbox record."""
    if not bundle_dir or not Path(bundle_dir).is_dir():
        return BundleRef()
    if inbox_key is None:
        with Store.open() as store:
            record = store.find_bundle_at(Path(bundle_dir), bundle_id)
            inbox_key = record.key if record is not None else None
    return BundleRef(bundleDir=str(bundle_dir), contentDigestB=digest_b(Path(bundle_dir)), inboxKey=inbox_key)


# -- execute ------------------------------------------------------------------------------------------------
def exec_request(params: ExecuteInput) -> ExecRequest:
    """The exec request ``params`` ask for (capabilities, cwd, limits), checked as ``codebox exec`` checks them."""
    if not params.command.strip():
        raise BadInputError("the command line is empty", code="empty-command", field="command")
    timeout_s = parse_duration(str(params.timeout), "timeout")
    return ExecRequest(
        command=params.command,
        cwd=params.cwd,
        capabilities=parse_capabilities(params.capabilities, "capabilities"),
        limits=ExecLimits(timeoutMs=max(1, int(timeout_s * 1000)), maxOutputBytes=params.max_output),
    )


def refuse_denied(result: ExecResult) -> None:
    """A command refused before it ran (a capability it lacks, the eval policy, a locked site selection) is a
    tool error naming what to change: ``capabilities`` for a missing capability, ``command`` otherwise."""
    error = result.error
    if error is None or error.code not in EXEC_DENIAL_CODES:
        return
    field = "capabilities" if error.code == "capability-denied" else "command"
    details = dict(error.details or {})
    needed = details.get("needed") or details.get("missing")
    hint = (
        f"classified {result.classification or 'unknown'}: pass capabilities {needed}"
        if field == "capabilities" and needed
        else None
    )
    raise PolicyDeniedError(
        error.message,
        code=error.code,
        field=field,
        details={**details, **({"hint": hint} if hint else {}), "classification": result.classification},
    )


def execute(
    params: ExecuteInput, *, progress: ProgressListener | None = None, control: RunControl | None = None
) -> ExecuteResult:
    """A command line in a held sandbox (``sandbox``) or a fresh one (booted, run, captured, disposed, recorded)."""
    request = exec_request(params)
    if params.sandbox is not None:
        defaults = ExecuteInput(command="-")
        given = [name for name in _FRESH_ONLY if getattr(params, name) != getattr(defaults, name)]
        if given:
            raise BadInputError(
                f"{', '.join(given)} only apply to a fresh sandbox, not with sandbox",
                code="invalid-option",
                field=given[0],
            )
        result = exec_on_held(params.sandbox, request, request.limits.timeoutMs / 1000 + HELD_ANSWER_GRACE_S)
        refuse_denied(result)
        return ExecuteResult(result=result, status="completed" if result.exitCode == 0 else "failed")
    check_before_boot(request)  # a denied command is refused here, as by `codebox exec`: nothing boots
    phar = _path(params.wp_cli_phar, "wp_cli_phar", what="the path of wp-cli.phar") if params.wp_cli_phar else None
    run_request = RunRequest(
        mounts=mounts_from_text(params.mounts),
        wp=params.wp,
        php=params.php,
        env=env_from_pairs([f"{name}={value}" for name, value in params.env.items()]),
        boot_timeout_s=parse_duration(str(params.boot_timeout), "boot_timeout"),
        artifacts_root=_artifacts(params.artifacts),
        tools=Toolchain(wp_cli_phar=phar),
        tool_commands=["wordpress.wp-cli"],
        flow="exec",
        backend=params.backend,
    )
    with RunService().open(run_request, progress=progress, control=control) as run:
        run.boot()
        result = run_exec(run.session, request)
        run.capture()
        if result.exitCode != 0:
            run.status = "failed"
    outcome = run.outcome
    assert outcome is not None  # set when the with block ends
    refuse_denied(result)  # after the capture: the refusal is recorded in the run's bundle too
    return ExecuteResult(
        result=result,
        status=outcome.status,
        bundle=bundle_ref(outcome.bundle_dir, outcome.bundle_id, outcome.inbox_key),
    )


# -- the flows ----------------------------------------------------------------------------------------------
def evaluate_patch(
    params: EvaluatePatchInput, *, progress: ProgressListener | None = None, control: RunControl | None = None
) -> FlowResult:
    """``codebox evaluate-patch --json``: the evaluation document (verdict, test delta, probe) and its bundle."""
    if (params.patch is None) == (params.git_range is None):
        raise BadInputError(
            "give exactly one of patch (a file) and git_range (BASE..HEAD)", code="invalid-arg", field="patch"
        )
    plugin = _path(params.plugin, "plugin", what="a plugin folder", folder=True)
    resolve_build(params.wp)  # an unknown version fails before anything boots
    try:
        check_bench_paths(params.bench, params.bench_count)
    except BadInputError as error:
        raise BadInputError(error.message, code=error.code, field="bench") from None
    options: dict[str, Any] = {
        "artifacts_dir": _artifacts(params.artifacts) or get_settings().artifacts_dir,
        "tests": params.tests or None,
        "probe_url": params.url,
        "wp": params.wp,
        "php": params.php,
        "backend": params.backend,
        "phpunit_xml": params.phpunit_xml,
        "test_filter": params.filter,
        "env": dict(params.env),
        "bootstrap": params.bootstrap,
        "wp_tests_lib": _path(params.wp_tests_lib, "wp_tests_lib", what="a folder", folder=True)
        if params.wp_tests_lib
        else None,
        "phpunit_polyfills": _path(params.phpunit_polyfills, "phpunit_polyfills", what="a folder", folder=True)
        if params.phpunit_polyfills
        else None,
        "wordpress_mode": params.wordpress,
        "tests_paths": params.tests_paths or None,
        "slug": params.slug,
        "bench_paths": params.bench or None,
        "bench_count": params.bench_count,
        "progress": progress,
    }
    if params.git_range is not None:
        document = evaluate_git_range(plugin, params.git_range, **options)
    else:
        assert params.patch is not None
        document = run_evaluation(plugin, _path(params.patch, "patch", what="a patch file"), **options)
    return FlowResult(
        document=document,
        success=bool(document.get("success")),
        bundle=bundle_ref(document.get("bundleDir"), document.get("bundleId")),
    )


def recipe_run(
    params: RecipeRunInput, *, progress: ProgressListener | None = None, control: RunControl | None = None
) -> FlowResult:
    """``codebox recipe-run --json``: an invalid recipe is a tool error listing every problem by its JSON path."""
    path = _path(params.recipe, "recipe", what="a recipe file")
    validation = validate_recipe_file(path)
    if not validation.valid:
        issues = validation.to_dict()["issues"]
        listed = "; ".join(f"{i['path']}: {i['message']}" for i in issues[:20])
        raise BadInputError(
            f"{path} is not a valid recipe: {listed}", code="invalid-recipe", field="recipe", details={"issues": issues}
        )
    document = run_recipe(
        validation, path.parent, artifacts_dir=_artifacts(params.artifacts), progress=progress, control=control
    )
    return FlowResult(
        document=document,
        success=bool(document.get("success")),
        bundle=bundle_ref(document.get("bundleDir"), document.get("bundleId")),
    )


def episode_run(
    params: EpisodeRunInput, *, progress: ProgressListener | None = None, control: RunControl | None = None
) -> FlowResult:
    """``codebox episode run --json``: the ``codebox/episode-result/v1`` document (redacted) and its bundle."""
    path = _path(params.plan, "plan", what="an episode plan file")
    restore = str(_path(params.restore, "restore", what="a snapshot document")) if params.restore else None
    plan = load_plan(path)
    episode, status = run_plan(
        plan,
        path.parent,
        artifacts_root=_artifacts(params.artifacts),
        progress=progress,
        control=control,
        restore=restore,
    )
    output = episode_run_output(episode, status)
    outcome = episode.outcome
    assert outcome is not None
    document = outcome.redact.value(output.model_dump(mode="json", by_alias=True, exclude_none=True))
    return FlowResult(
        document=document,
        success=output.success,
        bundle=bundle_ref(outcome.bundle_dir, outcome.bundle_id, outcome.inbox_key),
    )


# -- batch --------------------------------------------------------------------------------------------------
def batch_argv(params: BatchInput) -> list[str]:
    """``codebox batch FILE --json`` with the tool's options; the file is parsed here first, so a malformed one is
    refused (naming its line) before any process or Ray instance starts."""
    path = _path(params.file, "file", what="a batch file (JSON Lines)")
    parse_batch_file(path)
    argv = [sys.executable, "-m", "codebox_tui", "batch", str(path), "--json"]
    if params.concurrency is not None:
        argv += ["--concurrency", str(params.concurrency)]
    if params.timeout is not None:
        parse_duration(params.timeout, "timeout")
        argv += ["--timeout", params.timeout]
    argv += ["--retries", str(params.retries)]
    if params.ray_address:
        argv += ["--ray-address", params.ray_address]
    if params.artifacts:
        argv += ["--artifacts", str(Path(params.artifacts).expanduser().resolve())]
    return argv


def batch(
    params: BatchInput, *, progress: ProgressListener | None = None, control: RunControl | None = None
) -> FlowResult:
    """``codebox batch --json`` in a child process: its progress lines become progress, a cancelled request
    interrupts it (the batch is recorded as cancelled), its document is the result (per-item results)."""
    argv = batch_argv(params)
    child = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace"
    )

    def relay() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            if progress is not None and line.strip():
                progress.phase("batch", line.rstrip("\n"))

    reader = threading.Thread(target=relay, name="codebox-mcp-batch-stderr", daemon=True)
    reader.start()
    undo = control.on_cancel(lambda _reason: child.send_signal(signal.SIGINT)) if control is not None else None
    try:
        out, _ = child.communicate()
    finally:
        if undo is not None:
            undo()
        reader.join(timeout=5)
    try:
        document = json.loads(out)
    except ValueError:
        raise SandboxError(
            f"codebox batch exited {child.returncode} without a result document", code="batch-failed"
        ) from None
    if not isinstance(document, dict):
        raise SandboxError("codebox batch printed an unexpected document", code="batch-failed")
    error = document.get("error")  # a batch's own document has none; the CLI's failure document has one
    if isinstance(error, dict):  # the CLI's failure document: the same error, raised here
        field = {"FILE": "file"}.get(str(error.get("field")), error.get("field"))
        kind = BadInputError if document.get("exitCode") == ExitCode.BAD_INPUT else SandboxError
        raise kind(
            str(error.get("message")),
            code=str(error.get("code") or "batch-failed"),
            field=str(field) if field else None,
            details=error.get("details") or None,
        )
    return FlowResult(document=document, success=bool(document.get("success")))
