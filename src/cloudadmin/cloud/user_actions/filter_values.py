"""The values the user-action log's text filters take (GET /cloud/v1/user_actions, and
the Admin Portal's Events feed, which reads its query with the same types): at most as
long as the log's columns that they match."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

Text255 = Annotated[str, StringConstraints(max_length=255)]
SourceIp = Annotated[str, StringConstraints(max_length=64)]
UserAgent = Annotated[str, StringConstraints(max_length=512)]
