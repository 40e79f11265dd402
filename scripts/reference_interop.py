#!/usr/bin/env python3
"""Bundle interop with the reference WP Codebox verifier, in both directions, on real bundles.

Not part of ``make test``: it needs a local build of the reference, which is not available offline. Run it as

    .venv/bin/python scripts/reference_interop.py --reference-dir /tmp/refverify [--backend native|playground|both]
        [--work DIR] [--json]

Direction A (Codebox -> reference): for each backend (``--backend``, default both) it produces real Codebox
bundles (``codebox run`` with a read-write mount that PHP modifies, adds to and deletes from; a 2,100-file run;
a run with a binary change and a capture-skipped file; ``codebox evaluate-patch``; ``codebox recipe-run`` of
every example recipe plus one with ``artifacts.verify``) and runs the reference verifier (both variants) and
apply preflight on each. A kind of run the backend refuses by design (``native-unsupported``) is shown as
skipped; any other run that leaves no bundle is a failing check. Direction B (reference -> Codebox): the
reference's own writers write bundles, and Codebox verifies them (``codebox artifacts verify --json``), shows
them (``codebox artifacts show``) and loads them for the Review screen (``codebox_tui.bundle.reader``). A
table of results is printed; the exit status is 1 if any check failed.

What ``--reference-dir`` must contain: ``dist/driver.js``, a small Node driver around the reference's own
modules, with three commands that print JSON:

    node dist/driver.js verify <bundle> [--variant head|stored]   -> wp-codebox/artifact-bundle-verification/v1
    node dist/driver.js preflight <bundle>                        -> {ready, violations} (all changed files approved)
    node dist/driver.js write <out-dir> --mode a|b [--episode]    -> writes one bundle with the reference's writer

How the reference was built for the measured run (2026-11-27), outside this repository and never copied into it:
the public Automattic/wp-codebox sources come from the stored snapshot of its fork mirror
fork-the-planet/Automattic___wp-codebox (the search tool's ``fetch``; HEAD 3c81521c7001, which the spec describes,
is not stored). Its packages/runtime-core depends only on ajv, so it is built whole and unchanged at two
commits: 12a5bb19a97b (the newest stored, 2026-07-19: ``--variant head``; it already checks Mode A ids against
the file-list digest and caps stableJson) and 7e77c76f (2026-06-16: ``--variant stored``, older than Mode A).
The writers are packages/runtime-playground's collectPlaygroundArtifacts -> ArtifactBundleBuilder.build at
12a5bb19 (``--mode a``: Mode A ids, repository-relative patch headers) and at 7e77c76f (``--mode b``: Mode B,
sandbox-path headers), each compiled from runtime-artifact-helpers.ts and the files it imports, with the one
``playwright`` type import given a stand-in declaration. ``--episode`` runs the reference's own
createRuntimeEpisode (runtime-core at 12a5bb19) around the writer. The driver supplies only the runtime: an
object with the reference's Runtime interface whose one command edits the mounted plugin folder on disk
(modify, add, delete) the way a PHP run would, the mount's ``baselineSource`` being the untouched copy.
``preflight`` is the head preflightArtifactBundleApply, run once to learn the changed files and again with all
of them approved. Built with ``npm install typescript@5 ajv@8 @types/node@22`` and ``npx tsc`` (NodeNext, strict)
for each package and the driver.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CODEBOX = [sys.executable, "-m", "codebox_tui"]

MANY_PHP = r"""<?php
$d = WP_PLUGIN_DIR . '/many-plugin/gen';
@mkdir($d);
for ($i = 0; $i < 2100; $i++) { file_put_contents(sprintf("%s/f%04d.txt", $d, $i), "generated $i\n"); }
echo 'ok';
"""

MUTATE_PHP = r"""<?php
$d = WP_PLUGIN_DIR . '/interop-plugin';
file_put_contents("$d/interop-plugin.php", str_replace('"1.0"', '"2.0"', file_get_contents("$d/interop-plugin.php")));
file_put_contents("$d/includes/new.php", "<?php\n// added by the sandbox\nfunction interop_new() { return 42; }\n");
unlink("$d/includes/old.php");
file_put_contents("$d/crlf.txt", "line1\r\nline2 changed\r\n");
echo 'mutated';
"""

BINARY_SCRIPT = r"""
import sys
from pathlib import Path
from codebox_tui.bundle.capture import CaptureLimits, capture_bundle
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.runtime.backend import SandboxSpec
from codebox_tui.runtime.backends import default_php, make_backend
from codebox_tui.runtime.mounts import parse_mount
from codebox_tui.runtime.session import RunSession

src, out, backend = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
code = '''
$d = WP_PLUGIN_DIR . "/bin-plugin";
file_put_contents("$d/logo.png", file_get_contents("$d/logo.png") . "\x00\xff appended");
file_put_contents("$d/new-icon.bin", "\x00\x10\x20 new binary");
unlink("$d/data.bin");
file_put_contents("$d/big.txt", str_repeat("big line of text\n", 1000));
echo "ok";
'''
spec = SandboxSpec(mounts=[parse_mount(f"{src}:/wordpress/wp-content/plugins/bin-plugin:readwrite")],
                   policy=RuntimePolicy(commands=["wordpress.run-php"]), php=default_php(backend))
with RunSession(spec, out, backend=make_backend(backend)) as run:
    run.execute("wordpress.run-php", [f"code={code}"])
    info = run.runtime_info()
    run.dispose()
    run._close_streams()
    summary = capture_bundle(run.run_dir, runtime=info.model_copy(update={"status": "destroyed"}), mounts=spec.mounts,
                             baselines=run.baselines, policy=spec.policy, metadata=spec.metadata, secret_values=[],
                             evidence=run.evidence, test_suites=run.test_suites,
                             limits=CaptureLimits(max_file_bytes=4096))
    print(summary.path)
"""


@dataclass
class Row:
    direction: str
    name: str
    bundle: str
    checks: dict[str, str] = field(default_factory=dict)


@dataclass
class Produced:
    """One Codebox bundle to check (``bundle``), or why a producer made none (``error``, or ``skipped``
    when the backend refuses that kind of run by design)."""

    backend: str
    label: str
    bundle: Path | None = None
    error: str = ""
    skipped: str = ""


def _run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False, **kwargs)


def _bundle_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("runtime-*/manifest.json"))


def _collect(backend: str, label: str, out: Path, result: subprocess.CompletedProcess[str]) -> list[Produced]:
    """The bundles ``result`` left in ``out``, or one entry saying why there are none."""
    found = [Produced(backend, label, bundle) for bundle in _bundle_dirs(out)]
    if found:
        return found
    try:
        code = str(json.loads(result.stdout)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        code = ""
    if code == "native-unsupported":  # docs/backends.md: a blueprint is refused on native
        return [Produced(backend, label, skipped=code)]
    return [Produced(backend, label, error=f"exit {result.returncode}: {result.stderr.strip()[-300:]}")]


def _codebox_run(work: Path, backend: str, name: str, plugin: Path, php: str, label: str) -> list[Produced]:
    """``codebox run`` of ``php`` with ``plugin`` mounted read-write."""
    (work / f"{name}.php").write_text(php)
    out = work / f"out-{name}"
    result = _run(
        [
            *CODEBOX,
            "run",
            "--backend",
            backend,
            "--mount",
            f"{plugin}:/wordpress/wp-content/plugins/{plugin.name}:readwrite",
            "--command",
            "wordpress.run-php",
            "--arg",
            f"code-file={work / f'{name}.php'}",
            "--artifacts",
            str(out),
            "--json",
        ]
    )
    return _collect(backend, label, out, result)


def _write_plugins(work: Path) -> tuple[Path, Path, Path]:
    """Fresh source folders (a run changes its read-write mount's source: each backend gets its own)."""
    plugin = work / "interop-plugin"
    (plugin / "includes").mkdir(parents=True)
    (plugin / "interop-plugin.php").write_text(
        '<?php\n/* Plugin Name: Interop */\nfunction v() {\n\treturn "1.0";\n}\n'
    )
    (plugin / "includes/old.php").write_text("delete me\n")
    (plugin / "crlf.txt").write_bytes(b"line1\r\nline2\r\n")
    many = work / "many-plugin"
    many.mkdir()
    (many / "many.php").write_text("<?php /* Plugin Name: Many */\n")
    binplugin = work / "bin-plugin"
    binplugin.mkdir()
    (binplugin / "logo.png").write_bytes(bytes([0x89, 0x50, 0x4E, 0x47, 0, 0, 0, 13]) + bytes(range(256)))
    (binplugin / "data.bin").write_bytes(b"\x00\x01old")
    (binplugin / "big.txt").write_text("small\n")
    return plugin, many, binplugin


def produce_codebox_bundles(work: Path, backend: str) -> list[Produced]:
    """Real Codebox bundles through a real sandbox of ``backend`` (playground or native)."""
    work = work / backend
    work.mkdir(parents=True, exist_ok=True)
    plugin, many, binplugin = _write_plugins(work / "sources")
    bundles = _codebox_run(work, backend, "run", plugin, MUTATE_PHP, "run: rw mount, PHP modify/add/delete (+CRLF)")
    bundles += _codebox_run(work, backend, "many", many, MANY_PHP, "run: 2,100 files added (manifest capped at 2,000)")

    out = work / "out-binary"
    result = _run([sys.executable, "-c", BINARY_SCRIPT, str(binplugin), str(out), backend])
    bundles += _collect(backend, "run: binary change/add/delete + max-file-bytes skip", out, result)

    out = work / "out-evaluate"
    result = _run(
        [
            *CODEBOX,
            "evaluate-patch",
            "--backend",
            backend,
            "--plugin",
            "examples/plugins-for-recipes/buggy-counter",
            "--patch",
            "examples/patches/buggy-counter-fix.patch",
            "--artifacts-dir",
            str(out),
            "--json",
        ]
    )
    bundles += _collect(backend, "evaluate-patch buggy-counter", out, result)

    recipes = sorted((REPO / "examples/recipes").glob("*.json"))
    verify_copy = work / "plugin-scaffold-mutation-verify.json"
    recipe = json.loads((REPO / "examples/recipes/plugin-scaffold-mutation.json").read_text())
    recipe["artifacts"] = {"verify": True}
    verify_copy.write_text(json.dumps(recipe))
    for path in [*recipes, verify_copy]:
        out = work / f"out-recipe-{path.stem}"
        result = _run([*CODEBOX, "recipe-run", str(path), "--backend", backend, "--artifacts-dir", str(out), "--json"])
        label = f"recipe-run {path.stem}" + (" (artifacts.verify)" if path == verify_copy else "")
        bundles += _collect(backend, label, out, result)
    return bundles


def _codes(violations: list[dict[str, Any]]) -> str:
    codes = sorted({str(v.get("code")) for v in violations})
    return ", ".join(codes)


def reference_json(driver: Path, *args: str) -> dict[str, Any]:
    result = subprocess.run(["node", str(driver), *args], capture_output=True, text=True, check=False)
    try:
        data: dict[str, Any] = json.loads(result.stdout)
    except ValueError:
        return {"error": (result.stderr or result.stdout).strip()[-300:]}
    return data


def check_with_reference(driver: Path, produced: Produced) -> Row:
    row = Row(f"A codebox({produced.backend})->ref", produced.label, str(produced.bundle or ""))
    if produced.bundle is None:
        row.checks["codebox produced a bundle"] = (
            f"ok: skipped, {produced.skipped} by design" if produced.skipped else f"ERROR {produced.error}"
        )
        return row
    bundle = produced.bundle
    for variant in ("head", "stored"):
        data = reference_json(driver, "verify", str(bundle), "--variant", variant)
        key = f"ref verify ({variant})"
        if "error" in data:
            row.checks[key] = f"ERROR {data['error']}"
        else:
            row.checks[key] = "valid" if data["valid"] else f"INVALID {_codes(data['violations'])}"
    data = reference_json(driver, "preflight", str(bundle))
    row.checks["ref apply-preflight"] = (
        f"ERROR {data['error']}"
        if "error" in data
        else "ready"
        if data["ready"]
        else f"NOT READY {_codes(data['violations'])}"
    )
    return row


def check_with_codebox(driver: Path, mode: str, out: Path, episode: bool = False) -> Row:
    written = subprocess.run(
        ["node", str(driver), "write", str(out), "--mode", mode, *(["--episode"] if episode else [])],
        capture_output=True,
        text=True,
        check=False,
    )
    writer = "HEAD writer, repository-relative patch headers" if mode == "a" else "stored writer, sandbox-path headers"
    name = f"reference {writer}, Mode {mode.upper()}{', episode runner' if episode else ''}"
    row = Row("B ref->codebox", name, str(out))
    if written.returncode != 0:
        row.checks["ref writer"] = f"ERROR {written.stderr.strip()[-300:]}"
        return row
    own = reference_json(driver, "verify", str(out), "--variant", "head")
    verify = _run([*CODEBOX, "artifacts", "verify", str(out), "--json"])
    if episode:
        # The reference's episode runner appends the trace to manifest.files without sealing the Mode A digest
        # again (the spec's "observed gap", section 10): its own verifier rejects the bundle, and so must Codebox's.
        own_codes = _codes(own.get("violations", []))
        row.checks["ref verify (head, self-check)"] = f"ok: rejects its own bundle ({own_codes})"
        try:
            data = json.loads(verify.stdout)
            same = not data["valid"] and "digest-mismatch" in _codes(data["violations"])
            row.checks["codebox artifacts verify"] = (
                f"ok: rejects it too ({_codes(data['violations'])})" if same else f"DISAGREES {data}"
            )
        except (ValueError, KeyError):
            row.checks["codebox artifacts verify"] = f"ERROR {verify.stderr.strip()[-200:]}"
    else:
        row.checks["ref verify (head, self-check)"] = "valid" if own.get("valid") else f"INVALID {own}"
        try:
            data = json.loads(verify.stdout)
            row.checks["codebox artifacts verify"] = (
                "valid" if data["valid"] else f"INVALID {_codes(data['violations'])}"
            )
        except ValueError:
            row.checks["codebox artifacts verify"] = f"ERROR {verify.stderr.strip()[-200:]}"
    show = _run([*CODEBOX, "artifacts", "show", str(out), "--json"])
    try:
        shown = json.loads(show.stdout)
        counts = [(f["path"], f["additions"], f["deletions"]) for f in shown["changedFiles"]]
        ok = show.returncode == 0 and all(isinstance(a, int) and isinstance(d, int) for _, a, d in counts)
        row.checks["codebox artifacts show"] = f"ok {len(counts)} files" if ok else f"BAD {counts}"
    except (ValueError, KeyError) as error:
        row.checks["codebox artifacts show"] = f"ERROR {error}: {show.stderr.strip()[-200:]}"
    loaded = _run(
        [
            sys.executable,
            "-c",
            (
                "import json,sys; from codebox_tui.bundle.reader import load_bundle; "
                "from widgets.diff_model import block_for, split_patch; b=load_bundle(sys.argv[1]); "
                "blocks=split_patch(b.patch); "
                "print(json.dumps({'valid': b.valid, 'files': len(b.changed_files), 'patch': len(b.patch), "
                "'review': b.review.schema_, "
                "'noblock': [f.relativePath for f in b.changed_files "
                "if block_for(blocks, f) is None]}))"
            ),
            str(out),
        ]
    )
    try:
        info = json.loads(loaded.stdout)
        row.checks["reader.load_bundle"] = (
            f"ok valid={info['valid']} files={info['files']} patch={info['patch']}B" if info["review"] else "NO REVIEW"
        )
        # the Review screen's own lookup of a file's diff among the patch's blocks
        row.checks["review diff per file"] = (
            "ok" if not info["noblock"] else f"NO PATCH BLOCK for {', '.join(info['noblock'])}"
        )
    except ValueError:
        row.checks["reader.load_bundle"] = f"ERROR {loaded.stderr.strip()[-200:]}"
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-dir", type=Path, required=True, help="folder holding dist/driver.js")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a new temp folder, kept)")
    parser.add_argument(
        "--backend",
        choices=("native", "playground", "both"),
        default="both",
        help="the backend(s) whose sandboxes make direction A's bundles (default: both)",
    )
    parser.add_argument("--bundles", type=Path, nargs="*", help="check these Codebox bundles instead of producing")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    driver = args.reference_dir / "dist" / "driver.js"
    if not driver.is_file():
        parser.error(f"--reference-dir: {driver} not found (build the reference driver first; see the docstring)")
    if shutil.which("node") is None:
        parser.error("node is not on PATH")
    work = args.work or Path(tempfile.mkdtemp(prefix="codebox-interop-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("CODEBOX_HOME", str(work / "home"))

    backends = ("playground", "native") if args.backend == "both" else (args.backend,)
    if args.bundles:
        produced = [Produced("given", b.name, b) for b in args.bundles]
    else:
        produced = [item for backend in backends for item in produce_codebox_bundles(work, backend)]
    rows = [check_with_reference(driver, item) for item in produced]
    rows += [check_with_codebox(driver, mode, work / f"reference-mode-{mode}") for mode in ("a", "b")]
    rows.append(check_with_codebox(driver, "a", work / "reference-mode-a-episode", episode=True))

    if args.json:
        print(json.dumps([row.__dict__ for row in rows], indent=2))
    else:
        for row in rows:
            print(f"[{row.direction}] {row.name}\n    {row.bundle}")
            for check, result in row.checks.items():
                print(f"    {check:32} {result}")
    expected_stored = {"ref verify (stored)"}  # the stored snapshot predates Mode A: not a Codebox failure
    failed = [
        (row.name, check)
        for row in rows
        for check, result in row.checks.items()
        if check not in expected_stored and not result.startswith(("valid", "ready", "ok"))
    ]
    print(f"\n{len(rows)} bundles, {len(failed)} failing checks (work folder {work})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
