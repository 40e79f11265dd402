"""``wp-codebox/workspace-recipe/v1``: a declarative, reproducible sandbox run.

The pydantic models here are the one definition of the recipe; its JSON Schema (Draft 2020-12)
is generated from them. Every object is closed (``additionalProperties: false``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from codebox_tui.contracts.common import Contract
from codebox_tui.contracts.runtime import RuntimePolicy

RECIPE_SCHEMA = "wp-codebox/workspace-recipe/v1"

SLUG = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
ABS_PATH = r"^/"
ENV_NAME = r"^[A-Z_][A-Z0-9_]*$"


class RecipeRuntime(Contract):
    backend: Literal["wordpress", "wordpress-playground"] = "wordpress-playground"
    name: str | None = None
    wp: str = Field(default="6.5", description="WordPress version shipped offline, e.g. 6.5")
    phpVersion: str = Field(default="8.3", pattern=r"^\d+\.\d+$")
    blueprint: dict[str, Any] | None = None
    policy: RuntimePolicy | None = Field(
        default=None, description="Explicit runtime policy; derived from the workflow when absent"
    )
    bootTimeoutMs: int | None = Field(default=None, ge=1)


class RecipeMount(Contract):
    type: Literal["directory", "file"] = "directory"
    source: str = Field(min_length=1, description="Host path, relative to the recipe's directory")
    target: str = Field(pattern=ABS_PATH, description="Absolute sandbox path")
    mode: Literal["readonly", "readwrite"] = "readwrite"
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
    seed: WorkspaceSeed


class ExtraPlugin(Contract):
    source: str = Field(min_length=1, description="Local directory or .zip (relative to the recipe), or URL")
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


class SiteSeedScopes(Contract):
    posts: SeedScope | None = None
    pages: SeedScope | None = None
    terms: SeedScope | None = None
    options: SeedScope | None = None
    users: SeedScope | None = None
    activePlugins: bool = False
    activeTheme: bool = False


class SiteSeed(Contract):
    type: Literal["fixture", "parent_site"] = "fixture"
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    source: str | None = Field(default=None, min_length=1, description="Fixture JSON file (fixture seeds only)")
    format: Literal["json"] = "json"
    scopes: SiteSeedScopes


class RecipeInputs(Contract):
    mounts: list[RecipeMount] = Field(default_factory=list)
    workspaces: list[RecipeWorkspace] = Field(default_factory=list)
    extra_plugins: list[ExtraPlugin] = Field(default_factory=list)
    runtimeEnv: dict[str, str] = Field(default_factory=dict)
    secretEnv: list[str] = Field(default_factory=list)
    siteSeeds: list[SiteSeed] = Field(default_factory=list)


class RecipeStep(Contract):
    command: str = Field(min_length=1, description="A command id from `codebox commands`")
    args: list[str] = Field(default_factory=list, description="key=value strings")
    timeoutMs: int | None = Field(default=None, ge=1)
    allowFailure: bool = False
    advisory: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


class RecipeWorkflow(Contract):
    before: list[RecipeStep] = Field(default_factory=list)
    steps: list[RecipeStep] = Field(min_length=1)
    after: list[RecipeStep] = Field(default_factory=list)


class ArtifactPath(Contract):
    name: str = Field(min_length=1)
    path: str = Field(pattern=ABS_PATH)
    required: bool = False


class RecipeArtifacts(Contract):
    directory: str | None = None
    verify: bool = True
    paths: list[ArtifactPath] = Field(default_factory=list)


class WorkspaceRecipe(Contract):
    schema_: Literal["wp-codebox/workspace-recipe/v1"] = Field(alias="schema")
    metadata: dict[str, Any] = Field(default_factory=dict)
    runtime: RecipeRuntime = Field(default_factory=RecipeRuntime)
    inputs: RecipeInputs = Field(default_factory=RecipeInputs)
    workflow: RecipeWorkflow
    artifacts: RecipeArtifacts = Field(default_factory=RecipeArtifacts)


def recipe_json_schema() -> dict[str, Any]:
    """The Draft 2020-12 JSON Schema generated from :class:`WorkspaceRecipe`."""
    schema = WorkspaceRecipe.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = RECIPE_SCHEMA
    return schema
