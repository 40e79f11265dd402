"""Issue 12: secret leaks, risk-flag evasion through capture limits, unbounded command output, and
baseline packs left behind by a killed run. Every attack is performed by PHP inside a real sandbox (or by a real
``codebox run`` process), and every artifact written is scanned afterwards.

Redaction, capture limits and the sweep of baseline packs are host-side code shared by both backends, so those
attacks run on the native backend (docs/backends.md) and assert the backend their bundle records. The output cap
stays on Playground: there the sidecar cuts the output before it reaches Codebox (runtime/playground.py), a code
path of its own. The queries, decisions and applies after a run (and a refusal before one) go through the real
entry point in-process; every run itself is a real `codebox` process.

The forms of a secret searched for are computed here independently of ``bundle/redact.py``."""

from __future__ import annotations

import base64
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tests.factories.flood import FLOOD_TARGET, UNCAPTURED_FLOOD_PHP
from tests.factories.holds import codebox_in_process
from tests.factories.native import NATIVE, native_run, recorded_backend, run_natively

REPO = Path(__file__).resolve().parent.parent.parent
SECRET_NAME = "CODEBOX_SEC_TEST_TOKEN"
# a space and a "+" make the URL-encoded and JSON-escaped forms differ from the plain bytes
SECRET = "Sk_live+Q9z x7Wv2Lm"


def secret_forms(value: str) -> dict[str, bytes]:
    raw = value.encode()
    utf16 = value.encode("utf-16-be")
    units = [int.from_bytes(utf16[i : i + 2], "big") for i in range(0, len(utf16), 2)]
    u_escaped = "".join(f"\\u{unit:04x}" for unit in units)
    forms = {
        "utf-8": raw,
        "json-escaped": json.dumps(value, ensure_ascii=False)[1:-1].encode(),
        "json-u-escapes": u_escaped.encode(),
        "json-u-escapes-upper": "".join(f"\\u{unit:04X}" for unit in units).encode(),
        "json-in-json": json.dumps(u_escaped)[1:-1].encode(),
        "url-encoded": urllib.parse.quote(value, safe="").encode(),
        "url-encoded-plus": urllib.parse.quote_plus(value).encode(),
        "hex": raw.hex().encode(),
        "utf-16-le": value.encode("utf-16-le"),
        "utf-16-be": value.encode("utf-16-be"),
    }
    for shift, start in ((0, 0), (1, 2), (2, 3)):  # base64 at each alignment inside a longer stream
        encoded = base64.b64encode(b"\0" * shift + raw)
        core = encoded[start : (8 * (shift + len(raw))) // 6]
        forms[f"base64-{shift}"] = core
        forms[f"base64url-{shift}"] = core.translate(bytes.maketrans(b"+/", b"-_"))
    return forms


def scan(paths: list[Path], value: str = SECRET) -> list[str]:
    """``path: form`` for every file that holds any form of the secret (in its bytes or its name)."""
    forms = secret_forms(value)
    found = []
    for path in paths:
        name_hits = [f for f, b in forms.items() if b.decode("latin-1") in str(path)]
        found += [f"{path} (name): {f}" for f in name_hits]
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path}: {f}" for f, b in forms.items() if b in data]
    return found


def every_file(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() or p.is_dir())


def php_file(tmp_path: Path, code: str) -> Path:
    path = tmp_path / "attack.php"
    path.write_text("<?php\n" + code, encoding="utf-8")
    return path


LEAK_PHP = r"""
$s = getenv('CODEBOX_SEC_TEST_TOKEN');
$m = '/wordpress/wp-content/plugins/victim';
// (a) stdout is JSON whose \u escapes decode to the secret
$esc = '';
foreach (str_split($s) as $c) { $esc .= sprintf('\\u%04x', ord($c)); }
echo '{"leak":"' . $esc . '","nested":{"k' . $esc . '":["' . $esc . '"]}}';
file_put_contents('php://stderr', 'stderr ' . rawurlencode($s));
// (b) binary and non-UTF-8 files, and other encodings of the value
file_put_contents("$m/blob.bin", "\x00\x01" . $s . "\xff\xfe" . implode("\x00", str_split($s)) . "\x00");
file_put_contents("$m/latin1.txt", "caf\xe9 " . $s . "\n");
file_put_contents("$m/encoded.txt", base64_encode('xy' . $s) . "\n" . rawurlencode($s) . "\n" . bin2hex($s) . "\n"
    . urlencode($s) . "\n" . json_encode($s) . "\n" . $esc . "\n");
// (c) the secret in file and folder names (also inside an uncaptured folder)
@mkdir("$m/dir-$s");
file_put_contents("$m/dir-$s/inner.txt", "inner\n");
file_put_contents("$m/name-$s.txt", "named\n");
@mkdir("$m/node_modules/pkg-$s", 0777, true);
file_put_contents("$m/node_modules/pkg-$s/index.js", "x\n");
// a plain change, for the decision and apply-back
file_put_contents("$m/ok.txt", "fine\n");
"""


@pytest.mark.native
def test_no_form_of_a_secret_reaches_any_artifact(plugin_copy: Path, tmp_path: Path, codebox_home: Path) -> None:
    """Every file of the bundle and the run folder, the --json document, the store's database files
    and the apply audit are scanned for every form of the secret after PHP tried to leak it through
    stdout JSON escapes, binary / Latin-1 / encoded file contents and file and folder names."""
    artifacts = tmp_path / "artifacts"
    policy = json.dumps({"commands": ["wordpress.run-php"], "secrets": [SECRET_NAME]})
    run = run_natively(
        "--mount",
        f"{plugin_copy}:/wordpress/wp-content/plugins/victim:readwrite",
        "--command",
        "wordpress.run-php",
        "--arg",
        f"code-file={php_file(tmp_path, LEAK_PHP)}",
        "--artifacts",
        str(artifacts),
        "--policy",
        policy,
        "--json",
        env={SECRET_NAME: SECRET},
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    document = json.loads(run.stdout)
    # the --json document, incl. the parsed value (redacted after parsing, not only the text before it)
    leaks = [f"--json document: {f}" for f, b in secret_forms(SECRET).items() if b.decode("latin-1") in run.stdout]

    bundle_dir = Path(document["artifacts"]["directory"])
    assert recorded_backend(bundle_dir) == NATIVE
    leaks += scan(every_file(bundle_dir))  # before the decision: what the old code leaked shows up here
    assert leaks == [], "\n".join(leaks)
    assert document["execution"]["result"]["json"]["leak"] == "[REDACTED:configured-secret-value]"
    review = json.loads((bundle_dir / "files/review.json").read_text())
    assert "secret-in-path" in review["riskFlags"]
    assert any(f.startswith("secret-value-in-changed-file:") for f in review["riskFlags"])
    changed = json.loads((bundle_dir / "files/changed-files.json").read_text())
    assert {s["reason"] for s in changed["skipped"] if "REDACTED" in s["relativePath"]} == {"secret-in-path"}
    assert {f["relativePath"] for f in changed["files"]} >= {"ok.txt", "blob.bin", "latin1.txt", "encoded.txt"}
    verify = codebox_in_process(codebox_home, "artifacts", "verify", str(bundle_dir))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    shown = codebox_in_process(codebox_home, "artifacts", "show", str(bundle_dir))
    assert "secret-in-path" in shown.stdout

    # decision + apply-back (the patch adapter writes the approved subset) → the audit log
    decided = codebox_in_process(codebox_home, "review", "approve", document["artifacts"]["id"], "--json")
    assert decided.returncode == 0, decided.stdout + decided.stderr
    decision_id = str(json.loads(decided.stdout)["id"])
    patch_out = tmp_path / "approved.patch"
    applied = codebox_in_process(
        codebox_home, "apply", decision_id, "--adapter", "patch", "--target", str(patch_out), "--json"
    )
    assert applied.returncode in (0, 5), applied.stdout + applied.stderr

    scanned = every_file(bundle_dir) + every_file(artifacts)
    scanned += [p for p in codebox_home.iterdir() if p.name.startswith("codebox.sqlite3")]
    scanned += [codebox_home / "apply-audit.jsonl", patch_out]
    assert (codebox_home / "apply-audit.jsonl").is_file()
    leaks = scan(scanned)
    assert leaks == [], "\n".join(leaks)
    # the store's rows, read through SQLite (not only the raw file, which may keep old pages)
    with sqlite3.connect(codebox_home / "codebox.sqlite3") as db:
        dump = "\n".join(db.iterdump())
    assert SECRET not in dump


def test_secrets_too_short_to_redact_are_refused_by_name(tmp_path: Path, plugin_copy: Path, codebox_home: Path) -> None:
    """A 3-character secret used to be accepted and never redacted; now the run is refused before
    anything boots, and the error names the secret, never its value."""
    short = "q7Z"
    policy = json.dumps({"commands": ["wordpress.run-php"], "secrets": [SECRET_NAME]})
    run = codebox_in_process(
        codebox_home,
        "run",
        "--mount",
        f"{plugin_copy}:/wordpress/wp-content/plugins/victim:readwrite",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=echo getenv('CODEBOX_SEC_TEST_TOKEN');",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--policy",
        policy,
        "--json",
        env={SECRET_NAME: short},
    )
    assert run.returncode == 2, run.stdout + run.stderr
    failure = json.loads(run.stdout)
    assert failure["error"]["code"] == "secret-too-short"
    assert SECRET_NAME in failure["error"]["message"]
    assert short not in run.stdout + run.stderr
    assert not list((tmp_path / "artifacts").glob("runtime-*"))


def _flood_run(tmp_path: Path, plugin_copy: Path, count: int) -> dict[str, Any]:
    """``count`` files in an uncaptured folder, then a planted script beside them (a native sandbox)."""
    with native_run(
        tmp_path / "artifacts", mounts=[f"{plugin_copy}:{FLOOD_TARGET}:readwrite"], commands=["wordpress.run-php"]
    ) as run:
        code = UNCAPTURED_FLOOD_PHP % {"count": count}
        result = run.execute("wordpress.run-php", [f"code={code}"], 1200)
        assert result.stdout == "planted"
        summary = run.capture()
    assert recorded_backend(summary.path) == NATIVE
    review: dict[str, Any] = json.loads((summary.path / "files/review.json").read_text())
    review["_path"] = str(summary.path)
    return review


@pytest.mark.native
def test_exceeding_the_uncaptured_folder_tracking_limit_is_a_risk_flag(
    tmp_path: Path, plugin_copy: Path, monkeypatch: pytest.MonkeyPatch, codebox_home: Path
) -> None:
    """Past the tracking limit the change report used to switch reason silently; a planted .bin
    script went unflagged. The limit is lowered here through the same code path (list_tree reads it); the
    same attack at the default limit (200,000 entries, about a minute of PHP) is bench/bench_capture_flood.py."""
    import codebox_tui.bundle.diff as diff

    monkeypatch.setattr(diff, "MAX_TRACKED_IN_SKIPPED", 500)
    review = _flood_run(tmp_path, plugin_copy, 600)
    assert "changes-in-uncaptured-directories" in review["riskFlags"]
    assert "capture-limit-exceeded:skipped-directory-not-tracked" in review["riskFlags"]
    shown = codebox_in_process(codebox_home, "artifacts", "show", review["_path"])
    assert "risk     capture-limit-exceeded:skipped-directory-not-tracked" in shown.stdout


def _peak_rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@pytest.mark.playground
@pytest.mark.timeout(900)
def test_huge_output_is_capped_and_recorded(playground_session: Any, tmp_path: Path, codebox_home: Path) -> None:
    """PHP prints ~200 MB: the bundle stays small, the codebox process's peak RSS stays bounded, and
    the cut is recorded in the command result, the events, the review and `artifacts show`."""
    artifacts = tmp_path / "artifacts"
    code = "for ($i = 0; $i < 200; $i++) { echo str_repeat(chr(65 + $i % 26), 1048576); } echo 'THE-END';"
    out_path, err_path = tmp_path / "run.json", tmp_path / "run.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:  # files: a full pipe would stall the run
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "codebox_tui",
                "run",
                "--command",
                "wordpress.run-php",
                "--arg",
                f"code={code}",
                "--artifacts",
                str(artifacts),
                "--timeout",
                "10m",
                "--json",
            ],
            stdout=out,
            stderr=err,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _peak_rss_kib(proc.pid))
            time.sleep(0.05)
    stdout, stderr = out_path.read_text(), err_path.read_text()
    assert proc.returncode == 0, stderr[-3000:]
    assert peak < 400 * 1024, f"peak RSS {peak} KiB"
    document = json.loads(stdout)
    execution = document["execution"]
    cut = execution["diagnostics"]["outputTruncated"]["stdout"]
    assert cut["totalBytes"] == 200 * 1048576 + len("THE-END")
    assert cut["limitBytes"] == 10 * 1024 * 1024
    assert execution["stdout"].endswith("THE-END")  # the tail is kept
    assert len(execution["stdout"]) < 11 * 1024 * 1024
    bundle_dir = Path(document["artifacts"]["directory"])
    size = sum(p.stat().st_size for p in bundle_dir.rglob("*") if p.is_file())
    assert size < 40 * 1024 * 1024, f"bundle is {size} bytes"
    events = [json.loads(line) for line in (bundle_dir / "events.jsonl").read_text().splitlines()]
    assert any(e["type"] == "command.output-truncated" for e in events)
    review = json.loads((bundle_dir / "files/review.json").read_text())
    assert "output-truncated:stdout" in review["riskFlags"]
    shown = codebox_in_process(codebox_home, "artifacts", "show", str(bundle_dir))
    assert "output-truncated:stdout" in shown.stdout


@pytest.mark.native
def test_baseline_packs_of_a_sigkilled_run_are_swept(plugin_copy: Path, tmp_path: Path, codebox_home: Path) -> None:
    """A `codebox run` killed by SIGKILL while its command runs leaves its baseline packs (copies of
    the user's files); the next run removes them, as it removes abandoned sandbox folders."""
    (plugin_copy / "private-notes.txt").write_text("the user's own file\n")
    artifacts = tmp_path / "artifacts"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "run",
            "--backend",
            "native",
            "--mount",
            f"{plugin_copy}:/wordpress/wp-content/plugins/victim:readwrite",
            "--command",
            "wordpress.run-php",
            "--arg",
            "code=sleep(120);",
            "--artifacts",
            str(artifacts),
            "--timeout",
            "5m",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    baselines_root = codebox_home / "baselines"
    owned: list[Path] = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            started = any("command.started" in p.read_text() for p in artifacts.glob("runtime-*/events.jsonl"))
            owned = [
                d
                for d in baselines_root.glob("baselines-*")
                if (d / ".codebox-owner-pid").is_file()
                and (d / ".codebox-owner-pid").read_text().strip() == str(proc.pid)
            ]
            if started and owned:
                break
            time.sleep(0.2)
        assert owned, "the run's baseline folder under CODEBOX_HOME/baselines was not found"
        assert any(p.name.endswith(".pack") for p in owned[0].iterdir())
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert owned[0].is_dir()  # SIGKILL: nothing could clean up
    follow_up = run_natively(
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=echo 1;",
        "--artifacts",
        str(tmp_path / "artifacts-2"),
        timeout=600,
    )
    assert follow_up.returncode == 0, follow_up.stderr[-2000:]
    assert [recorded_backend(b) for b in (tmp_path / "artifacts-2").glob("runtime-*")] == [NATIVE]
    deadline = time.monotonic() + 30
    while owned[0].exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not owned[0].exists(), "the killed run's baseline packs were not swept"


def test_redactor_covers_every_documented_form_and_refuses_short_secrets() -> None:
    """The forms listed in docs/security-secrets.md, for a value with non-ASCII and non-BMP characters;
    and resolve_secrets refuses a short value by name."""
    from codebox_tui.contracts.runtime import RuntimePolicy
    from codebox_tui.errors import BadInputError
    from codebox_tui.runtime.policy import SECRET_MARK, Redactor, resolve_secrets

    value = 'tök/en"😀 +9'
    redact = Redactor([value])
    raw = value.encode()
    forms = {
        **secret_forms(value),
        "utf-32-le": value.encode("utf-32-le"),
        "json-ascii": json.dumps(value).encode()[1:-1],
        "mixed": b't\\u00f6k%2Fen\\"\\ud83d\\ude00%20+9',
    }
    for name, form in forms.items():
        out = redact.data(b"<<" + form + b">>")
        assert form not in out and SECRET_MARK.encode() in out, name
    assert redact.value({"k" + value: [value, 1]}) == {"k" + SECRET_MARK: [SECRET_MARK, 1]}
    assert redact.contains(f"dir/{value}/x") and not redact.contains("dir/x")
    assert redact.data(b"unrelated text") == b"unrelated text"
    assert raw not in redact.data(b"\x00\xff" + raw)
    policy = RuntimePolicy(commands=["wordpress.run-php"], secrets=["SHORT_ONE"])
    with pytest.raises(BadInputError) as caught:
        resolve_secrets(policy, {"SHORT_ONE": "abc"})
    assert "SHORT_ONE" in caught.value.message and "abc" not in caught.value.message


def test_every_capture_limit_reached_is_a_risk_flag(tmp_path: Path) -> None:
    """Size and count caps of capture (not only the uncaptured-folder one) raise a risk flag: a real
    folder, a real baseline and a real capture with small limits."""
    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.bundle.capture import CaptureLimits, capture_bundle
    from codebox_tui.contracts.common import utc_now_iso
    from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy

    source = tmp_path / "plugin"
    source.mkdir()
    (source / "a.php").write_text("<?php\n")
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/plugin", mode="readwrite")
    baselines = take_baselines([mount], tmp_path / "scratch")
    (source / "big.bin").write_bytes(b"\0" * 4096)  # over max_file_bytes
    for index in range(5):  # over max_files
        (source / f"new-{index}.php").write_text(f"<?php // {index}\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    summary = capture_bundle(
        run_dir,
        runtime=RuntimeInfo(id="runtime-test", createdAt=utc_now_iso()),
        mounts=[mount],
        baselines=baselines,
        policy=RuntimePolicy(commands=["wordpress.run-php"]),
        metadata={},
        secret_values=[],
        evidence=[],
        test_suites=[],
        limits=CaptureLimits(max_file_bytes=1024, max_files=2),
    )
    flags = json.loads((summary.path / "files/review.json").read_text())["riskFlags"]
    assert "capture-limit-exceeded:max-file-bytes-exceeded" in flags
    assert "capture-limit-exceeded:max-files-exceeded" in flags
