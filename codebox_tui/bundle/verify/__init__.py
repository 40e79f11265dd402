"""``codebox artifacts verify``: fail-closed verification of a bundle (spec §2, same violation codes).

Hashing is streaming, so memory does not grow with file sizes. The package's parts:

- ``manifest``: :func:`verify_bundle` — manifest shape, listing topology, per-file hashes, the content digest
  and bundle id, and the documents every bundle may carry (metadata, review, cases);
- ``common``: the violation collector and the safe path and file helpers every check shares;
- ``references``: the reference manifest and the replay index (spec §1.6);
- ``schema``: payload schema checks (typed-artifacts index, tool-call transcripts);
- ``jsregex``: the ECMAScript ``pattern`` translator those schema checks use;
- ``episode``: the runtime episode trace validator.
"""

from __future__ import annotations

from codebox_tui.bundle.verify.common import (
    TOOL_CALL_TRANSCRIPT_SCHEMA,
    TYPED_ARTIFACTS_INDEX_SCHEMA,
    dot_segment,
    path_problem,
    reviewer_url_problem,
)
from codebox_tui.bundle.verify.episode import EPISODE_TRACE_SCHEMA, episode_trace_issues
from codebox_tui.bundle.verify.jsregex import JsPatternError, js_pattern
from codebox_tui.bundle.verify.manifest import verify_bundle
from codebox_tui.bundle.verify.schema import payload_schema_errors

__all__ = [
    "EPISODE_TRACE_SCHEMA",
    "TOOL_CALL_TRANSCRIPT_SCHEMA",
    "TYPED_ARTIFACTS_INDEX_SCHEMA",
    "JsPatternError",
    "dot_segment",
    "episode_trace_issues",
    "js_pattern",
    "path_problem",
    "payload_schema_errors",
    "reviewer_url_problem",
    "verify_bundle",
]
