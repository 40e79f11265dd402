"""Shared building blocks for the contract models."""

from __future__ import annotations

import secrets
import string
import time
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Contract(BaseModel):
    """Base of every wire model: closed by default, aliases by field name accepted."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class OpenContract(BaseModel):
    """A model that keeps unknown keys (for documents written by other implementations)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class Digest(Contract):
    algorithm: Literal["sha256"] = "sha256"
    value: str = Field(pattern=r"^[0-9a-f]{64}$")


def utc_now_iso() -> str:
    """ISO-8601 UTC with milliseconds and ``Z``, as the reference writes timestamps."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


_BASE36 = string.digits + string.ascii_lowercase


def _base36(number: int) -> str:
    out = ""
    while True:
        number, rem = divmod(number, 36)
        out = _BASE36[rem] + out
        if number == 0:
            return out


def new_id(prefix: str) -> str:
    """``<prefix>-<ms since epoch, base36>-<6 random base36>`` like the reference's ids."""
    return f"{prefix}-{_base36(int(time.time() * 1000))}-{''.join(secrets.choice(_BASE36) for _ in range(6))}"
