"""Durable, content-addressed storage of uploaded files, in a directory beside the database.

The directory is ``<data_dir>/blobs`` (``CLOUDADMIN_DATA_DIR``); a name is the SHA-256 of
the content plus its extension, so a file is written once and never changes.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from cloudadmin.config import Settings

NAME = re.compile(r"^[0-9a-f]{64}\.(png|jpg|svg|ico)$")
MEDIA_TYPES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "svg": "image/svg+xml",
    "ico": "image/x-icon",
}
SUBDIR = "branding"


def blob_dir(settings: Settings) -> Path:
    return (settings.blob_dir or settings.data_dir / "blobs") / SUBDIR


def store(directory: Path, data: bytes, extension: str) -> str:
    """Writes the content (atomically, flushed to disk) and returns its name."""
    name = f"{hashlib.sha256(data).hexdigest()}.{extension}"
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    if target.exists() and target.stat().st_size == len(data):
        return name
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return name


def path_of(directory: Path, name: str) -> Path | None:
    """The stored file of a name, or None (unknown or malformed names never touch disk)."""
    if not NAME.match(name):
        return None
    path = directory / name
    return path if path.is_file() else None
