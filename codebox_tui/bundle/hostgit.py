"""The one way Codebox runs ``git`` on the host: hardened against a repository the sandbox wrote.

A read-write mount can end up holding a ``.git`` that PHP wrote (a ``:live`` mount, or a folder that
was not a work tree when the sandbox ran). git acts on a repository's own configuration: a planted
``core.fsmonitor``, ``filter.<driver>.clean``/``smudge``/``process``, ``diff.<driver>.textconv``, a hook
or ``commit.gpgSign`` with ``gpg.program`` would each make *our* ``git status`` / ``git archive`` /
``git apply`` / ``git commit`` run the sandbox's commands on the host. Every invocation therefore:

- drops inherited ``GIT_*`` variables (``GIT_DIR``, ``GIT_CONFIG_PARAMETERS``, ``GIT_EXTERNAL_DIFF``…;
  only author/committer identity is kept) and reads no system or global configuration
  (``GIT_CONFIG_NOSYSTEM=1``, ``GIT_CONFIG_GLOBAL=/dev/null``);
- never prompts, pages or opens an editor (``GIT_TERMINAL_PROMPT=0``, ``--no-pager``, ``true`` as
  editor and askpass) and allows no transport (``GIT_ALLOW_PROTOCOL`` empty, ``protocol.allow=never``);
- runs no hooks (``core.hooksPath=/dev/null``), no fsmonitor, no signing program, no automatic gc;
- lists the configuration git would read for that folder (``git config --list --includes``, which
  executes nothing) and overrides, with ``-c`` (command-line scope wins over every file), every
  filter driver, diff/merge driver, per-protocol allowance and program-valued key found there.

Documented in docs/security-host.md ("Host-side trust").
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

GIT = "git"
_KEEP_ENV = frozenset(
    {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
    }
)

# Always given, whatever the repository says.
HARDENING: tuple[str, ...] = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.sshCommand=false",
    "core.pager=cat",
    "core.editor=true",
    "core.askPass=true",
    "core.gitProxy=",
    "core.alternateRefsCommand=",
    "credential.helper=",
    "diff.external=",
    "protocol.allow=never",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gpg.program=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "status.submoduleSummary=false",
)

# Keys found in the repository's configuration and what they are forced to.
_DRIVER_KEYS = {
    "filter": {"clean": "", "smudge": "", "process": "", "required": "false"},
    "diff": {"textconv": "", "command": ""},
    "merge": {"driver": ""},
    "difftool": {"cmd": "false"},
    "mergetool": {"cmd": "false"},
    "gpg": {"program": "false"},
}


class HostGitError(OSError):
    """git could not be run safely (its configuration could not be listed) or failed."""


def git_env() -> dict[str, str]:
    """The environment every host git runs with (see the module docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP_ENV}
    for name in ("SSH_ASKPASS", "PAGER", "EDITOR", "VISUAL", "LESS"):
        env.pop(name, None)
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "true",
            "GIT_EDITOR": "true",
            "GIT_SEQUENCE_EDITOR": "true",
            "GIT_PAGER": "cat",
            "GIT_ALLOW_PROTOCOL": "",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "LC_ALL": "C",
        }
    )
    return env


def _neutralising(key: str) -> str | None:
    """The ``-c`` override for one key of the repository's configuration, or None if it is harmless."""
    section, _, rest = key.partition(".")
    name, _, variable = rest.rpartition(".")
    forced = _DRIVER_KEYS.get(section)
    if forced is not None and name and variable in forced:
        return f"{key}={forced[variable]}"
    if section == "protocol" and name and variable == "allow":
        return f"{key}=never"
    if section == "credential" and name and variable == "helper":
        return f"{key}="
    return None


def neutralising_args(cwd: Path) -> list[str]:
    """``-c`` arguments overriding every program-valued key git would read in ``cwd``."""
    base = [GIT, "--no-pager", *_c(HARDENING), *_c(_safe_directories())]
    try:
        listed = subprocess.run(
            [*base, "config", "--list", "--includes", "-z", "--name-only"],
            cwd=cwd,
            env=git_env(),
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise HostGitError(f"git config --list failed in {cwd}: {error}") from error
    if listed.returncode != 0:
        raise HostGitError(
            f"git cannot read the configuration in {cwd}: {listed.stderr.decode(errors='replace').strip()}"
        )
    overrides: list[str] = []
    for raw in listed.stdout.split(b"\0"):
        key = raw.decode("utf-8", errors="replace").strip()
        if not key:
            continue
        override = _neutralising(key)  # git lists section and variable in lower case
        if override is not None and override not in overrides:
            overrides.append(override)
    return _c(overrides)


def _c(pairs: Sequence[str]) -> list[str]:
    args: list[str] = []
    for pair in pairs:
        args += ["-c", pair]
    return args


class HostGit:
    """Hardened git for one folder; the repository's configuration is listed once, on first use."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self._overrides: list[str] | None = None

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        stdout: int | IO[Any] | None = subprocess.PIPE,
        timeout: float = 300,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git <args>`` hardened. A non-zero exit is returned, not raised; HostGitError when the
        configuration cannot be listed, git cannot start, or it times out."""
        if self._overrides is None:
            self._overrides = neutralising_args(self.cwd)
        command = [GIT, "--no-pager", *_c(HARDENING), *_c(_safe_directories()), *self._overrides, *args]
        try:
            return subprocess.run(
                command,
                cwd=self.cwd,
                env=git_env(),
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                stdout=stdout,
                stderr=subprocess.PIPE,
                timeout=timeout,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise HostGitError(f"git {args[0] if args else ''} failed in {self.cwd}: {error}") from error

    def output(self, *args: str, input: bytes | None = None, timeout: float = 300) -> bytes:
        """stdout of a git command that must succeed (HostGitError otherwise)."""
        done = self.run(*args, input=input, timeout=timeout)
        if done.returncode != 0:
            raise HostGitError(
                f"git {args[0] if args else ''} failed in {self.cwd}: {done.stderr.decode(errors='replace').strip()}"
            )
        return done.stdout


def _global_values(key: str) -> list[str]:
    """Every value of ``key`` in the user's own global configuration (``git config`` only reads files:
    nothing is executed), or an empty list."""
    env = git_env()
    env.pop("GIT_CONFIG_GLOBAL")
    try:
        done = subprocess.run(
            [GIT, "config", "--global", "--includes", "-z", "--get-all", key],
            cwd="/",
            env=env,
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    return [v.decode(errors="replace") for v in done.stdout.split(b"\0") if v]


def user_identity() -> tuple[str, str]:
    """The user's own ``user.name`` / ``user.email`` from their global configuration, or empty strings."""
    names, emails = _global_values("user.name"), _global_values("user.email")
    return (names[-1] if names else ""), (emails[-1] if emails else "")


@functools.lru_cache(maxsize=1)
def _safe_directories() -> tuple[str, ...]:
    """The user's ``safe.directory`` entries (global config is not read by host git, and git honours this
    key only from protected scopes, the command line among them): repositories the user marked safe stay
    usable."""
    return tuple(f"safe.directory={value}" for value in _global_values("safe.directory"))
