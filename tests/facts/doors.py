"""The two doors into the database: the importer (`cloudadmin load`) and the API.

Each fact (what a valid value is, which names clash) has one definition; these
helpers send the same input through both so a test can assert the same outcome.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.importer import LoadError, load_document
from cloudadmin.kit.crypto import SecretBox
from tests.importer.documents import example

# Keys of the example document (tests/importer/documents.py).
OPERATOR = "1_operator-secret"
RESELLER = "2_reseller-secret"
CLIENT = "3_client-secret"


async def base_landscape(session: AsyncSession, box: SecretBox) -> None:
    """The example document, loaded and committed: the API's callers and accounts."""
    await load_document(session, example(), box)
    await session.commit()


async def importer_accepts(session: AsyncSession, box: SecretBox, document: dict[str, Any]) -> bool:
    """Whether `cloudadmin load` accepts ``document`` on top of what is stored; nothing
    of it is kept."""
    try:
        await load_document(session, document, box)
    except LoadError:
        return False
    finally:
        await session.rollback()
    return True
