"""``wp-codebox/workspace-recipe/v1``: a declarative, reproducible sandbox run.

The pydantic models here are the one definition of the recipe; its JSON Schema (Draft 2020-12)
is generated from them. Every object is closed (``additionalProperties: false``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from codebox_tui.contracts.common import Contract
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.versions import DEFAULT_WP_VERSION

RECIPE_SCHEMA = "wp-codebox/workspace-recipe/v1"

SLUG = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
ABS_PATH = r"^/"
ENV_NAME = r"^[A-Z_][A-Z0-9_]*$"


# A duration as every option takes it (codebox_tui/durations.py): 90, 90s, 15m, 2h, 500ms.
DURATION = r"^\s*\d+(\.\d+)?\s*(ms|s|m|h)?\s*$"


class RuntimePreview(Contract):
    """Codebox: a held preview asked for by the recipe, as ``recipe-run --preview-hold/--preview-port/
    --preview-public-url`` do (an option given on the command line wins over its field; docs/sites.md)."""

    hold: Annotated[str, Field(pattern=DURATION)] | Annotated[float, Field(gt=0)] | None = Field(
        default=None,
        description="Keep the sandbox and its live preview up this long after the workflow (a "
        "duration such as 15m, or seconds), then capture the bundle",
    )
    publicUrl: str | None = Field(
        default=None,
        description=(
            "The address a browser reaches the held preview by (a tunnel): an http(s) URL with a host; needs a hold"
        ),
    )
    siteUrl: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535, description="Fixed port for the live preview")
    bind: str | None = None
    lease: dict[str, Any] | str | None = None


class RuntimeAssets(Contract):
    wordpressDirectory: str | None = None
    wordpressZip: str | None = None


class RuntimeExtension(Contract):
    manifest: str = Field(min_length=1, description="Recipe-local path or https URL of an extension manifest")


class HostNodeHeap(Contract):
    minimumMiB: int | None = Field(default=None, ge=256, le=16384)
    maximumMiB: int | None = Field(default=None, ge=256, le=16384)


class RecipeRuntime(Contract):
    backend: Literal["wordpress", "wordpress-playground", "native"] | None = Field(
        default=None,
        description=(
            "Codebox: wordpress-playground (PHP compiled to WebAssembly) or native (the host's PHP in bubblewrap); "
            "absent or wordpress: recipe-run --backend, else CODEBOX_BACKEND (docs/backends.md)"
        ),
    )
    name: str | None = None
    wp: str = Field(default=DEFAULT_WP_VERSION, description="WordPress version shipped offline, e.g. 6.5")
    phpVersion: str | None = Field(
        default=None,
        pattern=r"^\d+\.\d+$",
        description=("Absent: the backend's default (8.3 on wordpress-playground, the host's PHP on native)"),
    )
    blueprint: dict[str, Any] | None = None
    policy: RuntimePolicy | None = Field(
        default=None, description="Explicit runtime policy; derived from the workflow when absent"
    )
    bootTimeoutMs: int | None = Field(default=None, ge=1)
    # Accepted with the reference shape; refused by validation (``unsupported-field``) when set.
    workers: Annotated[int, Field(ge=1, le=64)] | Literal["auto"] | None = None
    wordpressInstallMode: (
        Literal["install-from-existing-files", "install-from-existing-files-if-needed", "do-not-attempt-installing"]
        | None
    ) = None
    preview: RuntimePreview | None = None
    assets: RuntimeAssets | None = None
    extensions: list[RuntimeExtension] = Field(default_factory=list)
    bundledExtensions: list[Literal["intl", "redis", "memcached", "xdebug"]] = Field(default_factory=list)
    backendPackage: str | None = None
    stack: dict[str, Any] | None = None
    overlays: list[dict[str, Any]] = Field(default_factory=list)
    hostNodeHeap: HostNodeHeap | None = None


class RecipeMount(Contract):
    type: Literal["directory", "file"] = "directory"
    source: str = Field(min_length=1, description="Host path, relative to the recipe's directory")
    target: str = Field(pattern=ABS_PATH, description="Absolute sandbox path")
    mode: Literal["readonly", "readwrite"] = "readwrite"
    live: bool = Field(
        default=False,
        description=(
            "Codebox: a readwrite mount normally works on a private copy and the host folder changes only "
            "through apply-back; true writes the sandbox's changes straight through to the host folder"
        ),
    )
    captureArtifacts: bool = True
    phase: Literal["pre-install", "post-install"] = "post-install"
    metadata: dict[str, Any] = Field(default_factory=dict)


class WorkspaceSeed(Contract):
    type: Literal["plugin_scaffold", "theme_scaffold", "directory"]
    slug: str | None = Field(default=None, pattern=SLUG)
    name: str | None = None
    source: str | None = Field(default=None, min_length=1)
    excludePaths: list[str] = Field(default_factory=list)


class RecipeWorkspace(Contract):
    target: str | None = Field(default=None, pattern=ABS_PATH)
    mode: Literal["readonly", "readwrite"] = "readwrite"
    sourceMode: Literal["repo-backed", "site-backed"] | None = None
    seed: WorkspaceSeed


class ExtraPlugin(Contract):
    source: str = Field(
        min_length=1,
        description="Local directory, .zip or single-file must-use plugin "
        "(.php, always loaded as a mu-plugin; relative to the "
        "recipe), or URL",
    )
    sourcePath: str | None = None
    sourceRoot: str | None = None
    sourceSubpath: str | None = None
    sourceSubdir: str | None = None
    originalSource: str | None = None
    mountSlug: str | None = None
    composer: Literal["install"] | None = None
    slug: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
    pluginFile: str | None = None
    activate: bool = True
    loadAs: Literal["plugin", "mu-plugin"] = "plugin"
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    metadata: dict[str, Any] = Field(default_factory=dict)


class SeedScope(Contract):
    ids: list[int] = Field(default_factory=list, max_length=100)
    slugs: list[str] = Field(default_factory=list, max_length=100)
    names: list[str] = Field(default_factory=list, max_length=100)
    postTypes: list[str] = Field(default_factory=list, max_length=25)
    taxonomies: list[str] = Field(default_factory=list, max_length=25)
    roles: list[str] = Field(default_factory=list, max_length=25)
    statuses: list[str] = Field(default_factory=list, max_length=25)
    anonymize: bool | None = None
    maxRecords: int | None = Field(default=None, ge=1, le=100)
    includeFiles: bool | None = None


class SiteSeedScopes(Contract):
    posts: SeedScope | None = None
    pages: SeedScope | None = None
    terms: SeedScope | None = None
    options: SeedScope | None = None
    users: SeedScope | None = None
    media: SeedScope | None = None
    activePlugins: bool = False
    activeTheme: bool = False


class SiteSeed(Contract):
    type: Literal["fixture", "parent_site"] = "fixture"
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    source: str | None = Field(default=None, min_length=1, description="Fixture JSON file (fixture seeds only)")
    format: Literal["json"] = "json"
    deterministicIds: dict[str, Any] | None = None
    bootstrap: dict[str, Any] | None = None
    scopes: SiteSeedScopes


class StagedFile(Contract):
    source: str = Field(min_length=1, description="Recipe-local file or directory (relative to the recipe)")
    target: str = Field(pattern=ABS_PATH, description="Absolute sandbox path it is copied to after boot")


class RuntimeService(Contract):
    id: str | None = None
    name: str | None = None
    type: Literal["mysql", "redis", "smtp", "http"]
    outputs: dict[str, str] = Field(default_factory=dict, description="Service output -> environment name")
    metadata: dict[str, Any] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)


class ExternalService(Contract):
    id: str = Field(min_length=1)
    environment: str | None = None
    allowedHosts: list[str] = Field(default_factory=list)
    blockedHosts: list[str] = Field(default_factory=list)
    writes: Literal["forbidden", "record-only", "allowed-with-approval"] = "forbidden"
    secretEnv: list[str] = Field(default_factory=list)
    redaction: dict[str, Any] | list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class PluginRuntimePhp(Contract):
    memoryLimit: str | None = None
    maxExecutionTime: int | None = Field(default=None, ge=0)
    iniEntries: dict[str, str | int | bool] = Field(default_factory=dict)
    bootstrapIniEntries: dict[str, str | int | bool] = Field(default_factory=dict)


class HealthProbe(Contract):
    name: str = Field(min_length=1)
    type: Literal["plugin-active", "php", "wp-cli"]
    pluginFile: str | None = None
    code: str | None = None
    command: str | None = None


class PluginRuntime(Contract):
    label: str | None = None
    php: PluginRuntimePhp | None = None
    wpConfigDefines: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    setup: list[RecipeStep] = Field(default_factory=list)
    healthProbes: list[HealthProbe] = Field(default_factory=list)


class FixtureReset(Contract):
    strategy: Literal["none", "truncate-tables"] = "none"
    tables: list[str] = Field(default_factory=list)


class FixtureDatabase(Contract):
    name: str = Field(min_length=1)
    version: str | None = None
    source: str = Field(min_length=1, description="Recipe-local .sql file")
    format: Literal["sql"] = "sql"
    reset: FixtureReset | None = None


class SourcePackage(Contract):
    name: str = Field(min_length=1)
    source: str = Field(min_length=1)
    target: str = Field(pattern=ABS_PATH)
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    artifact: dict[str, Any] | bool | None = None


class RecipeInputs(Contract):
    mounts: list[RecipeMount] = Field(default_factory=list)
    workspaces: list[RecipeWorkspace] = Field(default_factory=list)
    extra_plugins: list[ExtraPlugin] = Field(default_factory=list)
    runtimeEnv: dict[str, str] = Field(default_factory=dict)
    secretEnv: list[str] = Field(default_factory=list)
    siteSeeds: list[SiteSeed] = Field(default_factory=list)
    stagedFiles: list[StagedFile] = Field(default_factory=list)
    # Accepted with the reference shape; refused by validation (``unsupported-field``) when set.
    workspace_preloads: list[dict[str, Any]] = Field(default_factory=list)
    component_manifest: dict[str, Any] | None = None
    dependency_overlays: list[dict[str, Any]] = Field(default_factory=list)
    services: list[RuntimeService] = Field(default_factory=list)
    externalServices: list[ExternalService] = Field(default_factory=list)
    pluginRuntime: PluginRuntime | None = None
    fixtureDatabases: list[FixtureDatabase] = Field(default_factory=list)
    fixtureUsers: list[dict[str, Any]] = Field(default_factory=list)
    userSessions: list[dict[str, Any]] = Field(default_factory=list)
    browserActors: list[dict[str, Any]] = Field(default_factory=list)
    sourcePackages: list[SourcePackage] = Field(default_factory=list)
    agent_bundles: list[dict[str, Any]] = Field(default_factory=list)
    inherit: Any = None
    inheritance: Any = None


class StepDiagnostics(Contract):
    capture: list[Literal["wpdb-queries"]] = Field(default_factory=list)
    maxItems: int | None = Field(default=None, ge=1)
    maxBytes: int | None = Field(default=None, ge=1)


class RecipeStep(Contract):
    command: str = Field(min_length=1, description="A command id from `codebox commands`")
    args: list[str] = Field(default_factory=list, description="key=value strings")
    timeoutMs: int | None = Field(default=None, ge=1)
    allowFailure: bool = False
    advisory: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Accepted with the reference shape; refused by validation (``unsupported-field``) when set.
    continuation: dict[str, Any] | None = None
    diagnostics: StepDiagnostics | None = None


class RecipeWorkflow(Contract):
    before: list[RecipeStep] = Field(default_factory=list)
    steps: list[RecipeStep] = Field(min_length=1)
    after: list[RecipeStep] = Field(default_factory=list)


class ArtifactPath(Contract):
    name: str = Field(min_length=1)
    path: str = Field(pattern=ABS_PATH)
    required: bool = False
    parseJson: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


class TypedArtifact(Contract):
    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    path: str = Field(pattern=ABS_PATH)
    required: bool = False
    contentType: str | None = None
    parseJson: bool = False
    payloadSchema: str | dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class RecipeArtifacts(Contract):
    directory: str | None = None
    verify: bool | dict[str, Any] = True
    workspacePolicy: bool | dict[str, Any] | None = None
    paths: list[ArtifactPath] = Field(default_factory=list)
    typed: list[TypedArtifact] = Field(default_factory=list)


class RecipeProbe(Contract):
    name: str = Field(min_length=1)
    step: RecipeStep
    expectJson: Any = Field(default=None, description="JSON the step's output must contain (subset match)")
    allowFailure: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


class WorkspaceRecipe(Contract):
    schema_: Literal["wp-codebox/workspace-recipe/v1"] = Field(alias="schema")
    kind: Literal["check", "reproduction"] = Field(
        default="check",
        description=(
            "reproduction: the probes describe the bug's behaviour; the run reports reproduced when they all pass and "
            'not-reproduced when one does not (docs/evaluate-patch.md, "Reproducing a bug")'
        ),
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    runtime: RecipeRuntime = Field(default_factory=RecipeRuntime)
    inputs: RecipeInputs = Field(default_factory=RecipeInputs)
    workflow: RecipeWorkflow
    artifacts: RecipeArtifacts = Field(default_factory=RecipeArtifacts)
    probes: list[RecipeProbe] = Field(default_factory=list, description="Steps run after the workflow")
    # Accepted with the reference shape; refused by validation (``unsupported-field``) when set.
    fuzzRun: dict[str, Any] | None = None
    adversarialCampaigns: list[dict[str, Any]] = Field(default_factory=list, max_length=32)
    distribution: dict[str, Any] | None = None


def recipe_json_schema() -> dict[str, Any]:
    """The Draft 2020-12 JSON Schema generated from :class:`WorkspaceRecipe`."""
    schema = WorkspaceRecipe.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = RECIPE_SCHEMA
    return schema
