"""Text every database can store.

PostgreSQL refuses NUL (U+0000) in text; no UTF-8 encoder accepts an unpaired
surrogate (U+D800..U+DFFF). Requests may carry both (``%00`` in a path, ``"\\ud800"``
in JSON): what is kept of a request (the activity log) is first made storable.
"""

from __future__ import annotations

import re

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` with each NUL and unpaired surrogate replaced by U+FFFD."""
    return UNSTORABLE.sub(REPLACEMENT, text)


def json_escape_surrogates(json_text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with each unpaired
    surrogate written as its ``\\uXXXX`` escape, as it was received: the text stays
    valid JSON and storable (json.dumps already escapes NUL as ``\\u0000``)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)
