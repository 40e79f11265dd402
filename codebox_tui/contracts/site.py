"""Contained-site handles: a durable, caller-owned handle to a prepared site (docs/sites.md).

``wp-codebox/browser-contained-site/v1`` is what ``codebox site create`` returns: a ``site_id`` stable for the
caller and the normalised inputs, the inputs' ``source_digest`` and how to ask for the site again.
``wp-codebox/browser-contained-site-status/v1`` is the answer of ``codebox site status``: ``recoverable`` when the
prepared site can be booted again from its snapshot, ``miss`` when the caller should create it anew. The
``codebox/contained-site-record/v1`` record is Codebox's own bookkeeping under ``$CODEBOX_HOME/sites``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from codebox_tui.contracts.common import Contract, Digest

CONTAINED_SITE_SCHEMA: Final = "wp-codebox/browser-contained-site/v1"
CONTAINED_SITE_STATUS_SCHEMA: Final = "wp-codebox/browser-contained-site-status/v1"
BLUEPRINT_REF_SCHEMA: Final = "wp-codebox/browser-blueprint-ref/v1"
SITE_RECORD_SCHEMA: Final = "codebox/contained-site-record/v1"
STATUS_ABILITY: Final = "wp-codebox/get-browser-contained-site-status"

SITE_ID_PATTERN = r"^prepared-[0-9a-f]{16}$"
HEX64 = r"^[0-9a-f]{64}$"


class RecoveryInput(Contract):
    cache_key: str = Field(pattern=SITE_ID_PATTERN, description="The site_id")
    input_hash: str | None = Field(default=None, pattern=HEX64)
    source_digest: str = Field(pattern=HEX64)


class Recovery(Contract):
    ability: str = Field(STATUS_ABILITY, description="What to ask for the site's status")
    input: RecoveryInput


class ContainedSite(Contract):
    schema_: Literal["wp-codebox/browser-contained-site/v1"] = Field(CONTAINED_SITE_SCHEMA, alias="schema")
    site_id: str = Field(pattern=SITE_ID_PATTERN, description="Stable for the caller and the normalised inputs")
    preview_id: str | None = Field(default=None, description="Stable for the site and a browser session")
    session_id: str | None = None
    caller_id: str = Field(min_length=1)
    status: Literal["ready", "preparing", "failed"] = "ready"
    persistence: Literal["browser-contained", "host-snapshot"] = Field(
        "host-snapshot", description="Codebox keeps the prepared site as a snapshot under $CODEBOX_HOME/sites"
    )
    source_digest: Digest
    recovery: Recovery


class BlueprintRef(Contract):
    schema_: Literal["wp-codebox/browser-blueprint-ref/v1"] = Field(BLUEPRINT_REF_SCHEMA, alias="schema")
    ref: str = Field(pattern=r"^prepared:prepared-[0-9a-f]{16}:[0-9a-f]{64}$")


class ContainedSiteStatus(Contract):
    success: bool = True
    schema_: Literal["wp-codebox/browser-contained-site-status/v1"] = Field(
        CONTAINED_SITE_STATUS_SCHEMA, alias="schema"
    )
    site_id: str = Field(min_length=1)
    status: Literal["recoverable", "miss"]
    blueprint_ref: BlueprintRef | None = Field(default=None, description="Present when recoverable")
    reason: str | None = Field(default=None, description="Codebox: why the site is a miss")


class SiteMount(Contract):
    source: str = Field(min_length=1, description="Absolute host folder")
    target: str = Field(pattern=r"^/")
    mode: Literal["readonly", "readwrite"]
    digest: str = Field(pattern=HEX64, description="The folder's content when the site was prepared")


class SiteRuntime(Contract):
    backend: Literal["playground", "native"]
    wp: str = Field(min_length=1, description="The --wp asked for")
    wordpressVersion: str = Field(min_length=1)
    php: str = Field(min_length=1)


class SiteSnapshotRef(Contract):
    id: str = Field(min_length=1)
    file: Literal["snapshot.json"] = "snapshot.json"
    sha256: str = Field(pattern=HEX64, description="Of the snapshot document's bytes, written by the host")
    bytes: int = Field(ge=0)


class SiteRecord(Contract):
    """``$CODEBOX_HOME/sites/<site_id>/site.json``."""

    schema_: Literal["codebox/contained-site-record/v1"] = Field(SITE_RECORD_SCHEMA, alias="schema")
    site: ContainedSite
    createdAt: str
    runtime: SiteRuntime
    mounts: list[SiteMount] = Field(default_factory=list)
    blueprint: dict[str, Any] | None = None
    snapshot: SiteSnapshotRef
