"""Deprecated: ``goat_core.credentials`` is an old path; import from
:mod:`goat_core.host._credentials` instead.

This module was part of the host before goat_core was laid out in packages (see
docs/architecture.md). It re-exports its old names unchanged and warns
(``DeprecationWarning``) when imported.
"""

import warnings

from goat_core.host._credentials import (
    KEYRING_SERVICE,
    KEYRING_TIMEOUT,
    CredentialStore,
    check_secret,
    credential_env_var,
    missing_credential_message,
    prompt_secret,
    read_secret_from_stdin,
)

__all__ = [
    "KEYRING_SERVICE",
    "KEYRING_TIMEOUT",
    "CredentialStore",
    "check_secret",
    "credential_env_var",
    "missing_credential_message",
    "prompt_secret",
    "read_secret_from_stdin",
]

__deprecated__ = "goat_core.host._credentials"

warnings.warn(
    "goat_core.credentials is deprecated; import from goat_core.host._credentials instead",
    DeprecationWarning,
    stacklevel=2,
)
