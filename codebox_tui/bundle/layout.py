"""Where everything lives in an artifact bundle: the one definition of each bundle path name.

Paths are POSIX, relative to the bundle folder (the one holding ``manifest.json``); docs/contracts.md,
section "Artifact bundle", lists them with their kinds and schema ids. Code that reads or writes a bundle
names these constants instead of spelling the paths (tests may keep literals where they assert the wire
format).
"""

from __future__ import annotations

from typing import Final

# -- the bundle's top level ----------------------------------------------------------------------
MANIFEST: Final = "manifest.json"
METADATA: Final = "metadata.json"
EVENTS: Final = "events.jsonl"
COMMANDS: Final = "commands.jsonl"
RUNTIME_LOG: Final = "logs/runtime.log"
COMMANDS_LOG: Final = "logs/commands.log"
# the site's state after a run as blueprint steps, and what they leave out (docs/site-state.md)
BLUEPRINT_AFTER: Final = "blueprint.after.json"
BLUEPRINT_AFTER_NOTES: Final = "blueprint.after-notes.json"

# -- the evidence folder -------------------------------------------------------------------------
FILES_DIR: Final = "files"
MOUNTS: Final = "files/mounts.json"
MOUNTED_FILES: Final = "files/mounted-files.json"
MOUNT_DIFFS: Final = "files/diffs.json"
WORKSPACE_PATCH: Final = "files/workspace-patch.json"
CHANGED_FILES: Final = "files/changed-files.json"
PATCH: Final = "files/patch.diff"
DIAGNOSTICS: Final = "files/diagnostics.json"
TEST_RESULTS: Final = "files/test-results.json"
REVIEW: Final = "files/review.json"
REFERENCE_MANIFEST: Final = "files/runtime-reference-manifest.json"
REPLAY_INDEX: Final = "files/runtime-replay-index.json"
PROBES: Final = "files/probes.json"
RUN_ATTESTATION: Final = "files/run-attestation.json"
VERIFICATION_EVIDENCE: Final = "files/runtime-evidence/artifact-bundle-verification.json"
CONTRIBUTOR_PATCH: Final = "files/contributor.patch"
EVALUATE_PATCH: Final = "files/evaluate-patch.json"
BENCH: Final = "files/bench.json"  # a run's first wordpress.bench document (docs/bench.md)
SITE_STATE_DIFF: Final = "files/site-state-diff.json"  # what the run did to the site (docs/site-state.md)
EPISODE_TRACE: Final = "files/runtime-episode-trace.json"  # kind runtime-episode-trace (docs/episodes.md)
EPISODE_EVENTS: Final = "files/runtime-episode.jsonl"  # kind runtime-episode-events (docs/episodes.md)
# an agent task's outcome files (docs/agent-tasks.md, "Outputs")
COMPLETION_OUTCOME: Final = "files/completion-outcome.json"
AGENT_RESULT: Final = "files/agent-result.json"
TRANSCRIPT: Final = "files/transcript.json"
SANDBOX_SESSION: Final = "files/sandbox-session.json"
TASK_INPUT: Final = "files/task-input.json"
TOOL_BRIDGE: Final = "files/tool-bridge.json"

# -- folders of per-step evidence ------------------------------------------------------------------
MOUNT_COPIES_DIR: Final = "files/mounts"  # the changed files' after-state copies, per mount
BROWSER_DIR: Final = "files/browser"  # screenshots and browser probe output
PHPUNIT_DIR: Final = "files/phpunit"  # one numbered folder per PHPUnit step (junit.xml, logs)
DECLARED_DIR: Final = "files/declared"  # files a recipe declares as outputs
RUNTIME_SNAPSHOTS_DIR: Final = "files/runtime-snapshots"  # `wp-snapshot` documents (docs/site-state.md)
RUNTIME_SNAPSHOT_BLOBS_DIR: Final = "files/runtime-snapshots/blobs"  # kind runtime-snapshot-blob, by sha256
WORDPRESS_STATE_DIR: Final = "files/wordpress-state"  # `wp-state-export` documents (docs/site-state.md)
OBSERVATIONS_DIR: Final = "files/observations"  # an episode's observation documents (docs/episodes.md)
# Evidence the Review screen lists: manifest paths under these prefixes — screenshots, test logs, and an
# episode's trace and observations (a reproduced bug's evidence, docs/episodes.md)
VIEWABLE_EVIDENCE_PREFIXES: Final = (BROWSER_DIR + "/", PHPUNIT_DIR + "/", EPISODE_TRACE, OBSERVATIONS_DIR + "/")

# -- the Mode B content address (spec §1.4): these two files' bytes, in this order -------------------
MODE_B_INPUTS: Final = (CHANGED_FILES, PATCH)


def browser_path(step: int | None = None) -> str:
    """The browser evidence folder, or step ``step``'s own subfolder of it."""
    return BROWSER_DIR if step is None else f"{BROWSER_DIR}/{step}"


def phpunit_path(step: int) -> str:
    """PHPUnit step ``step``'s evidence folder."""
    return f"{PHPUNIT_DIR}/{step}"


def declared_path(name: str) -> str:
    """Where a recipe's declared output ``name`` is copied."""
    return f"{DECLARED_DIR}/{name}"


def mount_diff_path(mount_index: int) -> str:
    """One read-write mount's own patch (``files/diffs/mount-<n>.patch``)."""
    return f"{FILES_DIR}/diffs/mount-{mount_index}.patch"


def mount_copy_path(mount_index: int, relative_path: str) -> str:
    """Where the after-state copy of a changed file of mount ``mount_index`` is kept."""
    return f"{MOUNT_COPIES_DIR}/{mount_index}/{relative_path}"


def runtime_snapshot_path(snapshot_id: str) -> str:
    """A runtime snapshot's document (kind ``runtime-snapshot``)."""
    return f"{RUNTIME_SNAPSHOTS_DIR}/{snapshot_id}.json"


def runtime_snapshot_blob_path(sha256: str) -> str:
    """A snapshot's externalized file content (kind ``runtime-snapshot-blob``)."""
    return f"{RUNTIME_SNAPSHOT_BLOBS_DIR}/{sha256}"


def wordpress_state_path(export_id: str) -> str:
    """A WordPress state export's document (kind ``wordpress-state``)."""
    return f"{WORDPRESS_STATE_DIR}/{export_id}.json"


def bench_path(n: int) -> str:
    """The ``n``-th (n >= 2) wordpress.bench document of a run (docs/bench.md)."""
    return f"files/bench-{n}.json"
