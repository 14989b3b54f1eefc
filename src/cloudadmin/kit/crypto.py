"""Hashing and encryption of secrets."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

_password_hasher = PasswordHasher()


def configure_password_hashing(time_cost: int, memory_kib: int) -> None:
    """The argon2id cost of the passwords hashed from now on (Settings'
    ``password_hash_time_cost`` and ``password_hash_memory_kib``). A stored hash names its
    own parameters, so hashes written under other ones still verify."""
    global _password_hasher
    current = _password_hasher
    if (current.time_cost, current.memory_cost) != (time_cost, memory_kib):
        _password_hasher = PasswordHasher(
            time_cost=time_cost, memory_cost=memory_kib, parallelism=current.parallelism
        )


def hash_password(password: str) -> str:
    """argon2id; by default with the library's recommended parameters (RFC 9106's second
    recommendation: 3 passes over 64 MiB)."""
    return _password_hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _password_hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def hash_api_secret(key_id: int, secret: str) -> str:
    """SHA-256 of an API key's secret, bound to the key id.

    Generated secrets carry 256 bits of entropy, so a fast hash is safe and keeps
    authentication cheap on every request (a password KDF would cost ~50 ms each).
    """
    return hashlib.sha256(f"{key_id}:{secret}".encode()).hexdigest()


def secret_matches(key_id: int, secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_api_secret(key_id, secret), stored_hash)


def new_api_secret() -> str:
    return secrets.token_urlsafe(32)


class SecretBox:
    """Authenticated symmetric encryption (Fernet) under keys derived from the secret
    key and, for decryption only, from the previous ones (``Settings.secret_keys``:
    ``SecretBox(*settings.secret_keys())``), so that the key can be changed while the
    stored secrets are re-encrypted (``rotate``)."""

    def __init__(self, secret_key: str, *previous: str) -> None:
        self._current = _fernet(secret_key)
        self._fernet = MultiFernet([self._current, *(_fernet(key) for key in previous)])

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken as exc:  # wrong CLOUDADMIN_SECRET_KEY or corrupted value
            raise ValueError("stored secret cannot be decrypted with this secret key") from exc

    def is_current(self, token: str) -> bool:
        """Encrypted under the current key already."""
        try:
            self._current.decrypt(token.encode())
        except InvalidToken:
            return False
        return True

    def rotate(self, token: str) -> str:
        """The same secret encrypted under the current key; ValueError when no key of
        this box decrypts it."""
        try:
            return self._fernet.rotate(token.encode()).decode()
        except InvalidToken as exc:
            raise ValueError("stored secret cannot be decrypted with any secret key") from exc


def _fernet(secret_key: str) -> Fernet:
    digest = hashlib.sha256(b"cloudadmin-secretbox-v1:" + secret_key.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))
