"""Keys to FlowCall's HTTP API (`flowcall serve`): how one is made, what is kept of it, and
what it allows. Only a key's hash and its first characters are ever stored (store/api_keys.py);
the key itself is shown once, when it is made (`flowcall keys create`, the studio's API page)."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime

from pydantic import BaseModel

from flowcall.core.errors import ConfigError

SECRET_PREFIX = "fc_"
PREFIX_LENGTH = 8  # characters after "fc_" kept in the clear, so lists can tell keys apart
NAME_PATTERN = r"^[\w\-. ]+$"  # as flow and dataset names
# A header longer than this is no key of ours; it is not hashed (a key is 46 characters).
MAX_SECRET_LENGTH = 200


def new_secret() -> str:
    """A new key: "fc_" and 32 random bytes, URL-safe base64 (256 bits)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def key_hash(secret: str) -> str:
    """The SHA-256 of a key, hex: what is stored and looked up.

    A fast hash is right here, where a password would want a slow one (bcrypt, scrypt,
    argon2): a slow hash protects secrets that people choose, which a stolen table lets one
    guess offline. These keys are 256 random bits, so there is nothing to guess, and every API
    request checks one, so the check must cost microseconds, not a hundred milliseconds."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def prefix_of(secret: str) -> str:
    """The characters of a key shown in lists: the first 8 after "fc_"."""
    return secret.removeprefix(SECRET_PREFIX)[:PREFIX_LENGTH]


def check_key_name(name: str) -> str:
    """A key's name as given, or ConfigError saying what is allowed."""
    if not name or not name.strip():
        raise ConfigError('a key needs a name (who or what uses it, e.g. "billing-app")')
    if len(name) > 120 or not re.fullmatch(NAME_PATTERN, name) or name != name.strip():
        raise ConfigError(
            f"key name {name!r} is not allowed; use 1 to 120 letters, digits, spaces and - _ . "
            "(not starting or ending with a space)"
        )
    return name


class ApiKey(BaseModel):
    """A stored key, without its secret or hash: what lists show and what a request is checked against."""

    name: str
    prefix: str
    flows: list[str] | None = None  # the flows it may call; None: every flow
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def allows(self, flow_name: str) -> bool:
        """Whether this key may call `flow_name`: never once revoked."""
        return self.active and (self.flows is None or flow_name in self.flows)
