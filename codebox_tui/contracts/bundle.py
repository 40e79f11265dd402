"""Artifact bundle contracts (spec sections 1–5): manifest, changed files, review, test results,
verification. These models are the one definition of each schema; JSON Schemas are generated."""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

from pydantic import Field

from codebox_tui.contracts.bundle_read import SkippedView
from codebox_tui.contracts.common import Contract, Digest, OpenContract

MANIFEST_FILE_LIST_DOMAIN: Final = "wp-codebox/artifact-manifest-file-list/v1"
MANIFEST_SELF_DOMAIN: Final = "wp-codebox/artifact-manifest-self/v1"
CONTENT_DOMAIN: Final = "wp-codebox/artifact-content/v1"
BUNDLE_ID_PREFIX: Final = "artifact-bundle-sha256-"
CHANGED_FILES_SCHEMA: Final = "wp-codebox/changed-files/v1"
REVIEW_SCHEMA: Final = "wp-codebox/artifact-review/v1"
TEST_RESULTS_SCHEMA: Final = "wp-codebox/test-results/v1"
VERIFICATION_SCHEMA: Final = "wp-codebox/artifact-bundle-verification/v1"
WORKSPACE_PATCH_SCHEMA: Final = "wp-codebox/workspace-patch/v1"
DIAGNOSTICS_SCHEMA: Final = "wp-codebox/artifact-diagnostics/v1"
REFERENCE_MANIFEST_SCHEMA: Final = "wp-codebox/runtime-reference-manifest/v1"
REPLAY_INDEX_SCHEMA: Final = "wp-codebox/runtime-replay-reference-index/v1"
PACKAGE_PROVENANCE_SCHEMA: Final = "wp-codebox/package-provenance/v1"


class ContentDigest(Contract):
    algorithm: Literal["sha256"] = "sha256"
    inputs: list[str]
    value: str = Field(pattern=r"^[0-9a-f]{64}$")


class ManifestFile(OpenContract):
    path: str
    kind: str
    contentType: str
    sha256: Digest
    redaction: dict[str, Any] | None = None
    provenance: dict[str, Any] | None = None
    viewer: dict[str, Any] | None = None


class Manifest(OpenContract):
    id: str
    createdAt: str
    runtime: dict[str, Any]
    contentDigest: ContentDigest
    files: list[ManifestFile]


class ChangedFile(OpenContract):
    """One added/modified/deleted file. sha256 values are over the raw bytes (the apply-back gate)."""

    path: str
    relativePath: str
    status: Literal["added", "modified", "deleted"]
    beforeSha256: str | None = None
    beforeMode: str | None = None
    afterSha256: str | None = None
    afterMode: str | None = None
    mountIndex: int
    mountTarget: str
    patchPath: str
    binary: bool = False
    additions: int = 0
    deletions: int = 0
    beforeSize: int | None = None
    afterSize: int | None = None
    artifactPath: str | None = None


class SkippedEntry(Contract):
    mountIndex: int
    relativePath: str
    reason: Literal[
        "symlink",
        "special-file",
        "max-file-bytes-exceeded",
        "max-total-bytes-exceeded",
        "max-files-exceeded",
        "unreadable",
        # inside a folder whose contents are never captured (.git, node_modules): reported, not copied
        "changed-in-skipped-directory",
        "skipped-directory-not-tracked",
        # more changes inside uncaptured folders than are listed one by one (size: how many more)
        "skipped-directory-reports-capped",
        # the file or folder name holds a configured secret: listed under its redacted name, not captured
        "secret-in-path",
    ]
    size: int | None = None
    change: Literal["added", "modified", "deleted"] | None = None  # for changed-in-skipped-directory


class ChangedFiles(Contract):
    schema_: Literal["wp-codebox/changed-files/v1"] = Field(default=CHANGED_FILES_SCHEMA, alias="schema")
    files: list[ChangedFile]
    skipped: list[SkippedEntry] = Field(default_factory=list)


class ChangedFilesListing(OpenContract):
    """``files/changed-files.json`` as a reader takes it (the review screens, ``artifacts show``, decisions,
    apply-back): each entry must be a valid :class:`ChangedFile`, while keys other writers add are kept and a
    bare ``{}`` placeholder (the reference writes those) reads as no changes. Writers use :class:`ChangedFiles`.
    The skipped entries are only shown, so they are read with the tolerant :class:`SkippedView`."""

    schema_: Literal["wp-codebox/changed-files/v1"] | None = Field(default=None, alias="schema")
    files: list[ChangedFile] = Field(default_factory=list)
    skipped: list[SkippedView] = Field(default_factory=list)


class TestCase(Contract):
    __test__: ClassVar[bool] = False  # a contract model, not a pytest test class

    name: str
    classname: str | None = None
    status: Literal["passed", "failed", "error", "skipped"]
    timeSeconds: float | None = None
    message: str | None = None
    details: str | None = None


class TestSuite(Contract):
    __test__: ClassVar[bool] = False

    name: str
    status: Literal["passed", "failed", "skipped", "unknown"]
    tests: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    unknown: int = 0
    cases: list[TestCase] = Field(default_factory=list)
    rawLogReferences: list[dict[str, str]] = Field(default_factory=list)
    phase: str | None = None  # e.g. "before" / "after" for patch evaluation


class TestSummary(Contract):
    total: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    unknown: int = 0


class TestResults(Contract):
    schema_: Literal["wp-codebox/test-results/v1"] = Field(default=TEST_RESULTS_SCHEMA, alias="schema")
    status: Literal["passed", "failed", "skipped", "unknown"] = "unknown"
    summary: TestSummary = Field(default_factory=TestSummary)
    suites: list[TestSuite] = Field(default_factory=list)
    rawLogReferences: list[dict[str, str]] = Field(default_factory=list)


class ReviewStats(Contract):
    added: int
    modified: int
    deleted: int
    total: int


class ReviewChangedFile(OpenContract):
    path: str
    status: str
    label: str
    mountTarget: str
    relativePath: str


class ReviewAction(OpenContract):
    kind: Literal["approve", "approve-files", "discard", "iterate"]
    label: str
    requiresApprovedFiles: bool | None = None


class Review(OpenContract):
    schema_: Literal["wp-codebox/artifact-review/v1"] = Field(default=REVIEW_SCHEMA, alias="schema")
    artifactId: str
    createdAt: str
    summary: str
    stats: ReviewStats
    changedFiles: list[ReviewChangedFile]
    progress: list[dict[str, Any]]
    actions: list[ReviewAction]
    evidence: dict[str, Any]
    riskFlags: list[str] = Field(default_factory=list)
    provenance: dict[str, Any] = Field(default_factory=dict)


class Violation(Contract):
    code: Literal[
        "missing-manifest",
        "malformed-manifest",
        "invalid-manifest-shape",
        "invalid-path",
        "missing-file",
        "orphaned-file",
        "digest-mismatch",
        "missing-file-hash",
        "file-hash-mismatch",
        "bundle-id-mismatch",
        "malformed-reference",
        "review-evidence-mismatch",
        "unsafe-file",
        "hardlink",
        "payload-schema-violation",
    ]
    path: str
    message: str
    file: str | None = None
    details: dict[str, Any] | None = None


class BundleVerification(Contract):
    schema_: Literal["wp-codebox/artifact-bundle-verification/v1"] = Field(default=VERIFICATION_SCHEMA, alias="schema")
    bundleDirectory: str
    valid: bool
    violations: list[Violation]
    manifest: dict[str, Any] | None = None


class Diagnostic(OpenContract):
    id: str
    type: str
    severity: Literal["error", "warning", "notice", "info"]
    message: str
    category: str | None = None
    path: str | None = None


class DiagnosticsSummary(Contract):
    total: int = 0
    error: int = 0
    warning: int = 0
    notice: int = 0
    info: int = 0


class Diagnostics(OpenContract):
    """``files/diagnostics.json`` (capture-skipped entries and other run diagnostics)."""

    schema_: Literal["wp-codebox/artifact-diagnostics/v1"] = Field(default=DIAGNOSTICS_SCHEMA, alias="schema")
    status: Literal["clean", "reported"]
    summary: DiagnosticsSummary
    diagnostics: list[Diagnostic]


class WorkspacePatchDigest(Contract):
    algorithm: Literal["sha256"] = "sha256"
    inputs: list[str]
    value: str = Field(pattern=r"^[0-9a-f]{64}$")


class WorkspacePatchSummary(OpenContract):
    changed: bool
    files: int
    added: int
    modified: int
    deleted: int


class WorkspacePatchWorkspace(OpenContract):
    mountIndex: int
    target: str
    source: str
    status: str
    changed: bool
    patch: str | None = None


class WorkspacePatch(OpenContract):
    """``files/workspace-patch.json``: the Mode B content digest decisions and apply-back bind to."""

    schema_: Literal["wp-codebox/workspace-patch/v1"] = Field(default=WORKSPACE_PATCH_SCHEMA, alias="schema")
    createdAt: str
    contentDigest: WorkspacePatchDigest
    summary: WorkspacePatchSummary
    workspaces: list[WorkspacePatchWorkspace]
    promotion: dict[str, Any] = Field(default_factory=dict)
    evidence: dict[str, Any] = Field(default_factory=dict)


class FileRef(OpenContract):
    """A listed bundle file with its hash, as the reference manifest and the replay index cite it."""

    path: str
    kind: str
    contentType: str
    sha256: Digest
    viewer: dict[str, Any] | None = None


class ArtifactBundleRef(Contract):
    kind: Literal["artifact-bundle"] = "artifact-bundle"
    id: str
    digest: Digest


class ReferenceSnapshot(OpenContract):
    id: str
    semantics: str
    digest: Digest
    replay: dict[str, Any]
    artifactRefs: list[dict[str, Any]]


class RuntimeReferenceManifest(OpenContract):
    """``files/runtime-reference-manifest.json`` (spec §1.6): every listed file but the id-bearing ones, hashed;
    ``digest`` is the domain digest of the document without ``id``, ``createdAt`` and ``digest``."""

    schema_: Literal["wp-codebox/runtime-reference-manifest/v1"] = Field(
        default=REFERENCE_MANIFEST_SCHEMA, alias="schema"
    )
    version: Literal[1] = 1
    id: str = Field(pattern=r"^runtime-reference-manifest-sha256-[0-9a-f]{64}$")
    createdAt: str
    digest: Digest
    runtime: dict[str, Any]
    artifactBundle: ArtifactBundleRef
    files: list[FileRef]
    trace: FileRef | None = None
    events: FileRef | None = None
    snapshots: list[ReferenceSnapshot]


class ReplayNotes(OpenContract):
    status: Literal["partial", "runtime-state-artifact", "metadata-only"]
    instructions: list[str]
    limitations: list[str]


class RuntimeReplayIndex(OpenContract):
    """``files/runtime-replay-index.json`` (spec §1.6): where a replayer finds each piece of evidence."""

    schema_: Literal["wp-codebox/runtime-replay-reference-index/v1"] = Field(
        default=REPLAY_INDEX_SCHEMA, alias="schema"
    )
    version: Literal[1] = 1
    id: str = Field(pattern=r"^runtime-replay-reference-index-sha256-[0-9a-f]{64}$")
    createdAt: str
    digest: Digest
    runtime: dict[str, Any]
    artifactBundle: ArtifactBundleRef
    references: dict[str, FileRef]
    actions: list[dict[str, Any]]
    observations: list[dict[str, Any]]
    snapshots: list[ReferenceSnapshot]
    replay: ReplayNotes
