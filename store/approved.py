"""One approved file as apply-back sees it: a changed-files entry with its patch block (cut to the approved
hunks), in the names the plan, the adapters and the three-way merge (store/threeway.py) use. Its own module so
the plan and the merge both import it at the top, without a cycle between them."""

from __future__ import annotations

from dataclasses import dataclass

from codebox_tui.contracts.bundle import ChangedFile


@dataclass(frozen=True)
class ApprovedChange:
    """One approved entry of ``changed-files.json`` (a :class:`ChangedFile`) with its patch block, in the
    names adapters use."""

    relative_path: str
    sandbox_path: str
    status: str  # added | modified | deleted
    before_sha256: str | None
    after_sha256: str | None
    after_mode: str | None
    mount_index: int
    block: bytes  # the file's block, cut to the approved hunks when ``hunks`` is set
    binary: bool = False
    # approved in part (docs/contracts.md, "Hunk selection"): the approved hunks' hashes; None = whole
    hunks: tuple[str, ...] | None = None
    # the file's whole block (== ``block`` unless approved in part) and its after copy in the bundle: what
    # a three-way apply recovers the baseline from (store/threeway.py)
    full_block: bytes = b""
    artifact_path: str | None = None

    @property
    def partial(self) -> bool:
        return self.hunks is not None

    @classmethod
    def of(
        cls, entry: ChangedFile, block: bytes, hunks: tuple[str, ...] | None = None, full_block: bytes | None = None
    ) -> ApprovedChange:
        return cls(
            relative_path=entry.relativePath,
            sandbox_path=entry.path or entry.relativePath,
            status=entry.status,
            before_sha256=entry.beforeSha256 or None,
            after_sha256=entry.afterSha256 or None,
            after_mode=entry.afterMode or None,
            mount_index=entry.mountIndex,
            block=block,
            binary=entry.binary,
            hunks=hunks,
            full_block=block if full_block is None else full_block,
            artifact_path=entry.artifactPath or None,
        )
