"""Integer types bounded by the columns they reach.

Python integers have no size; INTEGER and BIGINT columns (and SQL OFFSET/LIMIT) do.
A number past a column's range must be a 400 naming the field, never a driver error
(PostgreSQL: "value out of int32 range"; SQLite: "Python int too large"). These bounds
work both in request models and as query or path parameters (add ``Query()`` or
``Path()`` beside them for a description).
"""

from __future__ import annotations

from typing import Annotated

from annotated_types import Ge, Le

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# Any value of an INTEGER column.
Int32 = Annotated[int, Ge(INT32_MIN), Le(INT32_MAX)]
# A row id (or a reference to one) in an INTEGER column: ids start at 1.
Id32 = Annotated[int, Ge(1), Le(INT32_MAX)]
# A filter on an INTEGER id column where 0 is accepted (it matches nothing).
Id32Filter = Annotated[int, Ge(0), Le(INT32_MAX)]
# Rows skipped by a page: SQL OFFSET is a BIGINT on both databases.
PageOffset = Annotated[int, Ge(0), Le(INT64_MAX)]
