"""Dialect code lives where db/dialect.py's docstring says: never in the layers that
serve every domain (web, auth, kit, observability, logs, errors), which pass the
dialect's name along at most."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import cloudadmin

SOURCE = Path(cloudadmin.__file__).parent
WITHOUT_DIALECT_CODE = ["web", "auth", "kit", "observability", "logs.py", "errors.py"]
DATABASES = {"postgresql", "sqlite"}


def modules(*names: str) -> list[Path]:
    out: list[Path] = []
    for name in names:
        path = SOURCE / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def dialect_code(path: Path) -> list[str]:
    """Where ``path`` names a database in its code (a string that is one's name, a
    dialect-specific SQLAlchemy import): comments and docstrings aside."""
    found = []
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    previous = None
    for token in tokens:
        is_docstring = previous in (None, tokenize.INDENT, tokenize.NEWLINE)
        names_one = token.type == tokenize.STRING and token.string.strip("'\"") in DATABASES
        imports_one = token.type == tokenize.NAME and token.string == "dialects"
        if (names_one and not is_docstring) or imports_one:
            found.append(f"{path.name}:{token.start[0]}: {token.line.strip()}")
        if token.type not in (tokenize.COMMENT, tokenize.NL):
            previous = token.type
    return found


def test_the_shared_layers_hold_no_dialect_code():
    assert all((SOURCE / name).exists() for name in WITHOUT_DIALECT_CODE)
    checked = modules(*WITHOUT_DIALECT_CODE)
    assert [line for path in checked for line in dialect_code(path)] == []


def test_the_check_finds_dialect_code_where_it_is():
    found = dialect_code(SOURCE / "db" / "dialect.py")
    assert any('== "postgresql"' in line for line in found)
    assert any("sqlalchemy.dialects" in line for line in found)
