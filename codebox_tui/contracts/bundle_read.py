"""Read views of a bundle's ``manifest.json``, ``files/review.json`` and ``metadata.json``: what the review
surfaces (the Review screen, ``codebox artifacts show``, the MCP ``artifacts_show`` tool, the inbox) read.

The write contracts (codebox_tui/contracts/bundle.py) are strict: every field a writer must write is required.
A reader has to show more than that: a bundle written by the reference implementation (its review has fewer
keys than Codebox writes), an older one, or one that fails verification is still shown with its violations
(docs/architecture.md, "Review"). So a view is *tolerant*:

- every field has a default, and keys it does not declare are kept (``extra="allow"``);
- a field of the wrong type reads as its default, and the problem is recorded (:meth:`ReadView.read_problems`)
  instead of raising: an exception would hide the whole bundle, and the verifier (bundle/verify/) reports
  what a bundle violates; a bad item of a list drops only that item (one odd risk flag never hides the rest).

The field names are the contracts' (tests/unit/test_bundle_read_views.py checks every view field against its
write contract where one exists); ``metadata.json`` has no write contract, so :class:`MetadataView` is the one
definition of what a reader takes from it.
"""

from __future__ import annotations

from typing import Any, Final, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, to_jsonable_python

MAX_PROBLEMS: Final = 20  # per view: a hostile document with thousands of bad items is not a thousand lines
_PASSES: Final = 3


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _drop_bad(
    data: dict[str, Any], errors: list[ErrorDetails], problems: list[str], kept: dict[str, list[int]], *, items: bool
) -> bool:
    """Remove what ``errors`` name from ``data`` (a list item when ``items`` and the error is inside one, else
    the whole key) and record each problem; ``kept`` maps a list whose items were dropped to the indexes, as
    written, of the items left. False when an error names nothing that can be removed."""
    removable = True
    bad_items: dict[str, set[int]] = {}
    bad_keys: set[str] = set()
    for error in errors:
        loc = tuple(error["loc"])
        if len(problems) < MAX_PROBLEMS:
            problems.append(f"{_where(loc) or '(document)'}: {error['msg']}")
        elif len(problems) == MAX_PROBLEMS:
            problems.append("(more problems not listed)")
        key = loc[0] if loc else None
        if not isinstance(key, str) or key not in data:
            removable = False
        elif items and len(loc) > 1 and isinstance(loc[1], int) and isinstance(data[key], list):
            bad_items.setdefault(key, set()).add(loc[1])
        else:
            bad_keys.add(key)
    for key, indexes in bad_items.items():
        if key not in bad_keys:
            data[key] = [item for index, item in enumerate(data[key]) if index not in indexes]
            kept[key] = [index for index in range(len(data[key]) + len(indexes)) if index not in indexes]
    for key in bad_keys:
        del data[key]
    return removable


class ReadView(BaseModel):
    """Base of the tolerant read views (see the module docstring)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    _problems: list[str] = PrivateAttr(default_factory=list)
    _kept: dict[str, list[int]] = PrivateAttr(default_factory=dict)  # list key → written index of each item
    _order: list[str] = PrivateAttr(default_factory=list)  # the keys in the order the document wrote them

    @model_validator(mode="wrap")
    @classmethod
    def _tolerate(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if not isinstance(data, dict):
            # not a JSON object at all: the field holding it reads as its default (the parent view records it)
            return handler(data)
        problems: list[str] = []
        kept: dict[str, list[int]] = {}
        current = dict(data)
        for attempt in range(_PASSES):
            try:
                view = handler(current)
            except ValidationError as error:
                if not _drop_bad(current, error.errors(), problems, kept, items=attempt == 0):
                    break
                continue
            view._problems, view._kept, view._order = problems, kept, list(data)
            return view
        view = handler({})
        view._problems = [*problems, "(read as empty: it could not be read even in part)"]
        view._order = []
        return view

    @classmethod
    def read(cls, data: object) -> Self:
        """``data`` (parsed JSON) as this view; never raises: a document that is not an object reads as empty,
        with the problem recorded."""
        try:
            return cls.model_validate(data)
        except ValidationError:
            view = cls()
            view._problems = [f"(document): expected a JSON object, got {type(data).__name__}"]
            return view

    def read_problems(self) -> list[str]:
        """What could not be read as declared, this view's and its nested views', each as ``field: message``
        (the field path as written in the document)."""
        out = list(self._problems)
        for name, info in type(self).model_fields.items():
            key = info.alias or name
            value = getattr(self, name)
            nested: list[tuple[str, ReadView]] = []
            if isinstance(value, ReadView):
                nested.append((key, value))
            elif isinstance(value, list):
                written = self._kept.get(key, [])
                nested += [
                    (f"{key}[{written[i] if i < len(written) else i}]", v)
                    for i, v in enumerate(value)
                    if isinstance(v, ReadView)
                ]
            for where, view in nested:
                out += [
                    f"{where}.{problem}" if not problem.startswith("(") else f"{where}: {problem}"
                    for problem in view.read_problems()
                ]
        return out

    def written(self) -> dict[str, JsonValue]:
        """The keys the document wrote that read cleanly, in the order it wrote them, as JSON: what a summary
        echoes (``codebox artifacts show --json`` prints a well-formed document's part exactly as written)."""
        alias_of = {name: info.alias or name for name, info in type(self).model_fields.items()}
        name_of = {alias: name for name, alias in alias_of.items()}
        extra = self.__pydantic_extra__ or {}
        # keys set after reading (model_copy(update=...)) follow the written ones
        later = sorted(alias_of[n] for n in self.model_fields_set if n in alias_of and alias_of[n] not in self._order)
        out: dict[str, JsonValue] = {}
        for key in [*self._order, *later]:
            if key in name_of and name_of[key] in self.model_fields_set:
                out[key] = _as_json(getattr(self, name_of[key]))
            elif key in extra:
                out[key] = _as_json(extra[key])
        return out


def _as_json(value: object) -> JsonValue:
    if isinstance(value, ReadView):
        return value.written()
    if isinstance(value, list):
        return [_as_json(item) for item in value]
    converted: JsonValue = to_jsonable_python(value)
    return converted


class _TextOrNumber(ReadView):
    """A view whose text fields also take a number (``"phpVersion": 8.3``) and read it as its text."""

    model_config = ConfigDict(coerce_numbers_to_str=True, defer_build=True)


# -- manifest.json (contract: Manifest, ManifestFile) --------------------------------------------------------


class ManifestFileView(ReadView):
    """One listed file of ``manifest.json`` ``files[]`` (contract: ManifestFile)."""

    path: str = ""
    kind: str = ""
    contentType: str = ""


class ManifestView(ReadView):
    """``manifest.json`` as the review surfaces read it (contract: Manifest)."""

    id: str = ""
    createdAt: str | None = None
    files: list[ManifestFileView] = Field(default_factory=list)


# -- files/changed-files.json skipped[] (contract: SkippedEntry) ---------------------------------------------


class SkippedView(ReadView):
    """One entry of ``changed-files.json`` ``skipped[]``: a change that was reported, not captured (contract:
    SkippedEntry; the fields in its order, so a summary echoes Codebox's entries key for key)."""

    mountIndex: int | None = None
    relativePath: str = ""
    reason: str = ""
    size: int | None = None
    change: str | None = None
    # not in Codebox's contract: a foreign writer may name the entry by its sandbox path (the apply-staging risk
    # flag looks at both; bundle/reader.py)
    path: str = ""

    @property
    def name(self) -> str:
        """The path shown for it: the mount-relative path, else the sandbox path."""
        return self.relativePath or self.path


# -- files/review.json (contract: Review) --------------------------------------------------------------------


class ReviewStatsView(ReadView):
    """``review.json`` ``stats`` (contract: ReviewStats)."""

    added: int = 0
    modified: int = 0
    deleted: int = 0
    total: int = 0


class ReviewChangedFileView(ReadView):
    """One entry of ``review.json`` ``changedFiles[]`` (contract: ReviewChangedFile)."""

    path: str = ""
    status: str = ""
    label: str = ""
    mountTarget: str = ""
    relativePath: str = ""


class ReviewEvidenceView(ReadView):
    """``review.json`` ``evidence``: where the reviewed evidence is and its digests (Codebox adds
    ``contentDigestB``; the reference does not)."""

    workspacePatch: str | None = None
    patch: str | None = None
    patchSha256: str | None = None
    artifactContentDigest: str | None = None
    contentDigestB: str | None = None
    changedFiles: str | None = None
    diagnostics: str | None = None
    testResults: str | None = None


class RuntimeVersionsView(_TextOrNumber):
    """``provenance.runtime``: the backend and the versions it ran (either writer)."""

    backend: str | None = None
    wordpressVersion: str | None = None
    phpVersion: str | None = None


class EnvironmentView(_TextOrNumber):
    """A runtime ``environment`` (metadata ``runtime.environment``, ``provenance.packages.environment``)."""

    wordpressVersion: str | None = None
    phpVersion: str | None = None
    version: str | None = None  # the reference's runtime.environment: the WordPress version


class PackagesView(ReadView):
    environment: EnvironmentView = Field(default_factory=EnvironmentView)


class ProvenanceView(ReadView):
    """``provenance`` (in metadata.json and review.json)."""

    runtime: RuntimeVersionsView = Field(default_factory=RuntimeVersionsView)
    packages: PackagesView = Field(default_factory=PackagesView)


class ReviewView(ReadView):
    """``files/review.json`` as the review surfaces read it (contract: Review). A bundle without one reads as
    empty."""

    schema_: str | None = Field(default=None, alias="schema")
    artifactId: str = ""
    createdAt: str = ""
    summary: str | None = None
    stats: ReviewStatsView = Field(default_factory=ReviewStatsView)
    changedFiles: list[ReviewChangedFileView] = Field(default_factory=list)
    evidence: ReviewEvidenceView = Field(default_factory=ReviewEvidenceView)
    riskFlags: list[str] = Field(default_factory=list)
    provenance: ProvenanceView = Field(default_factory=ProvenanceView)


# -- metadata.json (no write contract: Codebox's writer is bundle/capture_docs.py metadata_document) --------


class MetadataRuntimeView(_TextOrNumber):
    """``metadata.json`` ``runtime``."""

    backend: str | None = None
    environment: EnvironmentView = Field(default_factory=EnvironmentView)


class PreflightView(_TextOrNumber):
    """The reference's ``context.phpWasmRuntimeAssetPreflight`` (the only place it records the PHP version)."""

    phpVersion: str | None = None


class ContextView(ReadView):
    phpWasmRuntimeAssetPreflight: PreflightView = Field(default_factory=PreflightView)


class MountView(ReadView):
    """One of ``metadata.json`` ``mounts[]`` (as written: a MountSpec dump, or the reference's mount)."""

    source: str = ""
    target: str = ""
    mode: str = ""


class BaselineView(ReadView):
    """One of ``metadata.json`` ``baselines[]``: how a mount's before-state was taken."""

    mountIndex: int | None = None
    strategy: str | None = None
    writeMode: str | None = None


class MetadataView(ReadView):
    """``metadata.json`` as the review surfaces read it: runtime versions, mounts, policy and baselines."""

    id: str = ""
    contentDigestB: str | None = None
    runtime: MetadataRuntimeView = Field(default_factory=MetadataRuntimeView)
    provenance: ProvenanceView = Field(default_factory=ProvenanceView)
    context: ContextView = Field(default_factory=ContextView)
    mounts: list[MountView] = Field(default_factory=list)
    policy: dict[str, JsonValue] = Field(default_factory=dict)
    baselines: list[BaselineView] = Field(default_factory=list)
