"""The portal writes no SQL of its own (docs/architecture.md, "The portal"): it calls the
services the API's endpoints call. No module of src/cloudadmin/portal/ imports
SQLAlchemy, except the types a service is handed (a page's transaction is an
``AsyncSession``; a streamed CSV download reads on an ``AsyncConnection`` of its own,
portal/csv_export.py), and no string of its code is an SQL statement. Read with ``ast``,
so that a section added later is checked too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import cloudadmin.portal

PORTAL = Path(cloudadmin.portal.__file__).parent
# What the portal may import from SQLAlchemy: the types it hands to the services.
ALLOWED = {
    ("sqlalchemy.ext.asyncio", "AsyncSession"),
    ("sqlalchemy.ext.asyncio", "AsyncConnection"),
}
# An SQL statement in a string: the keywords as SQL writes them, in capitals.
SQL = re.compile(r"\b(SELECT\s+\S+.*\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b", re.S)


def modules() -> list[Path]:
    return sorted(PORTAL.rglob("*.py"))


def sqlalchemy_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Each import of SQLAlchemy that is not one of ALLOWED: (line, what)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "sqlalchemy"
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlalchemy":
            found += [
                (node.lineno, f"{node.module}.{a.name}")
                for a in node.names
                if (node.module, a.name) not in ALLOWED
            ]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
            in ("__import__", "import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).startswith("sqlalchemy")
        ):
            found.append((node.lineno, str(node.args[0].value)))
    return found


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (prose may name SQL's words)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def sql_strings(tree: ast.AST) -> list[tuple[int, str]]:
    prose = docstrings(tree)
    return [
        (node.lineno, node.value[:80])
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in prose
        and SQL.search(node.value)
    ]


def test_the_portal_has_modules_to_check():
    names = {p.relative_to(PORTAL).as_posix() for p in modules()}
    assert {"context.py", "routes.py", "forms.py"} <= names
    assert any(name.startswith("sections/") for name in names)


def test_no_module_of_the_portal_imports_sqlalchemy_beyond_the_session_types():
    found = {
        path.relative_to(PORTAL).as_posix(): imports
        for path in modules()
        if (imports := sqlalchemy_imports(ast.parse(path.read_text(), str(path))))
    }
    assert found == {}, (
        "the portal calls the services, which own the SQL; add a function to the domain's "
        f"service or repository instead: {found}"
    )


def test_no_string_of_the_portal_is_an_sql_statement():
    found = {
        path.relative_to(PORTAL).as_posix(): strings
        for path in modules()
        if (strings := sql_strings(ast.parse(path.read_text(), str(path))))
    }
    assert found == {}, found


def test_the_checks_find_what_they_look_for():
    # The checks themselves: each kind of import and an SQL string is caught.
    source = (
        "import sqlalchemy\n"
        "from sqlalchemy import select\n"
        "from sqlalchemy.ext.asyncio import AsyncSession, AsyncEngine\n"
        "import importlib\n"
        "m = importlib.import_module('sqlalchemy.sql')\n"
        "def f():\n"
        "    '''SELECT a FROM b, in prose'''\n"
        "    return 'SELECT id FROM users WHERE 1'\n"
    )
    tree = ast.parse(source)
    assert sqlalchemy_imports(tree) == [
        (1, "sqlalchemy"),
        (2, "sqlalchemy.select"),
        (3, "sqlalchemy.ext.asyncio.AsyncEngine"),
        (5, "sqlalchemy.sql"),
    ]
    assert sql_strings(tree) == [(8, "SELECT id FROM users WHERE 1")]
    assert sql_strings(ast.parse("x = 'Select the accounts from the list'")) == []
