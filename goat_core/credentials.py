"""Former home of the credential store, now in :mod:`goat_core.host`: re-exports the names
this module had (import them from :mod:`goat_core.host`)."""

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
