"""The one way a task's work says that the change cannot be made."""

from __future__ import annotations


class TaskFailed(Exception):
    """The change cannot be made; its message becomes the task's ``error``. Raised
    before the work changes anything."""
