"""The documentation stands on its own and covers every operation.

README.md and docs/**/*.md may only point at files of this repository (their links and
the file names they mention must exist here), must not lean on a specification kept
elsewhere ("the spec", its numbered operations, its file names), and docs/api.md must
describe every operation the app serves, and none it does not.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
INDEX = DOCS / "api.md"
METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}

YAML_RULE = "a YAML document that is not in the repository"
# The folder the specification once stood in, beside the repository (spelt apart so that
# this file names no path outside the repository itself).
BESIDE = "sha" + "red"
# What a reference to a document outside the repository looks like. Each was once in the
# docs, pointing at specification files nobody who clones the repository has.
FORBIDDEN = {
    "the external API description": re.compile(r"api[-_ ]description", re.I),
    "the external import description": re.compile(r"data[-_ ]import\.md", re.I),
    "a shared folder beside the repository": re.compile(rf"\.\./{BESIDE}\b|\b{BESIDE}/spec", re.I),
    "'spec' as a document (the OpenAPI document is the contract)": re.compile(
        r"\bspec(s|'s|ification)?\b", re.I
    ),
    "the external specification's operation numbers": re.compile(
        r"\boperations? \d+(\s*[–-]\s*\d+)?\b(?![.,]\d)", re.I
    ),
    "the external specification's table rows": re.compile(r"\brow \d+\b(?![.,]\d)", re.I),
    "a file quoted as an authority": re.compile(
        r"\b[\w-]+\.(md|ya?ml) (says|said|lists|states|is silent)\b", re.I
    ),
    YAML_RULE: re.compile(r"\b[\w-]+\.ya?ml\b", re.I),
    "a path of a build machine": re.compile(r"(?<![\w.~$])/(work|root|home)/"),
}
# A heading numbered after the external specification: "## PATCH /iam/clients/{id} (1)".
NUMBERED_HEADING = re.compile(r"^#{1,6} .*\(\d+(\s*[–-]\s*\d+)?\)\s*$", re.M)

FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
BARE_MD_NAME = re.compile(r"(?<![\w/.-])((?:\.{1,2}/)?[\w][\w./-]*\.md)\b")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
OPERATION_HEADING = re.compile(r"^###\s+([A-Z]+)\s+(/\S*)\s*$", re.M)


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


@cache
def text_of(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def without_code(text: str) -> str:
    """Fenced blocks and code spans blanked: they show examples, not references."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text, lower case, punctuation dropped."""
    plain = re.sub(r"[`*]", "", heading)
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", plain)  # a link keeps its text
    plain = unicodedata.normalize("NFC", plain).lower()
    plain = re.sub(r"[^\w\- ]", "", plain)
    return plain.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in HEADING.finditer(FENCE.sub("", text_of(path))):
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return frozenset(found)


def inside_repository(path: Path) -> bool:
    try:
        path.resolve().relative_to(ROOT)
    except ValueError:
        return False
    return True


def link_problems(doc: Path, text: str) -> list[str]:
    """What is wrong with the links of ``text``, written in the file ``doc``."""
    text = without_code(text)
    targets = [m.group(1) for m in INLINE_LINK.finditer(text)]
    targets += [m.group(1) for m in REFERENCE_DEF.finditer(text)]
    problems = []
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (doc.parent / unquote(file_part)).resolve() if file_part else doc
        if file_part.startswith("/") or not inside_repository(resolved):
            problems.append(f"{target}: outside the repository")
        elif not resolved.exists():
            problems.append(f"{target}: no such file in the repository")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{target}: no heading with the anchor #{anchor}")
    return problems


def mentions_an_existing_file(doc: Path, name: str) -> bool:
    """A file name in prose ("see access.md") must be one of the repository's."""
    bases = (doc.parent, ROOT, DOCS)
    return any(inside_repository(base / name) and (base / name).is_file() for base in bases)


@pytest.mark.parametrize("doc", documents(), ids=ids(documents()))
class TestSelfContained:
    def test_links_stay_in_the_repository(self, doc: Path):
        assert link_problems(doc, text_of(doc)) == []

    def test_named_documents_exist_here(self, doc: Path):
        # Code spans included: `data-import.md` names a file as much as data-import.md.
        text = FENCE.sub("", text_of(doc))
        names = {m.group(1) for m in BARE_MD_NAME.finditer(text)}
        assert sorted(n for n in names if not mentions_an_existing_file(doc, n)) == []

    def test_no_reference_to_an_external_specification(self, doc: Path):
        text = text_of(doc)
        found = [
            f"line {text.count(chr(10), 0, m.start()) + 1}: {what}: {m.group(0)!r}"
            for what, pattern in FORBIDDEN.items()
            for m in pattern.finditer(text)
            if not (what == YAML_RULE and mentions_an_existing_file(doc, m.group(0)))
        ]
        found += [f"numbered heading: {m.group(0)!r}" for m in NUMBERED_HEADING.finditer(text)]
        assert found == []


class TestTheChecksBite:
    """The checks above must fail on what they are meant to catch."""

    @pytest.mark.parametrize(
        "target",
        [
            f"../../{BESIDE}/spec/access.md",
            "api-description.md",
            "/etc/hosts",
            "../../README.md",
            "iam.md#no-such-heading",
            "#nor-here",
        ],
    )
    def test_links_outside_or_missing(self, target: str):
        assert link_problems(DOCS / "api.md", f"see [there]({target})") != []

    def test_good_links_pass(self):
        text = "[a](iam.md#api-tokens) [b](../README.md) [c](#health) [d](https://x.example/)"
        assert link_problems(DOCS / "api.md", text) == []

    @pytest.mark.parametrize(
        "phrase",
        [
            "as the spec says",
            "Operations 1–3 and 7–11",
            "(beside row 18)",
            "see `api-description.md`",
            "data-import.md defaults",
            "access.md is silent",
            "`iam_api.yaml`",
            f"../{BESIDE}/spec",
            "/home/someone/README.md",
        ],
    )
    def test_forbidden_phrases(self, phrase: str):
        assert any(p.search(phrase) for p in FORBIDDEN.values()), phrase

    def test_numbered_heading(self):
        assert NUMBERED_HEADING.search("## PATCH /iam/clients/{clientId} (1)\n")
        assert NUMBERED_HEADING.search("## Notification settings (9–11)\n")
        assert not NUMBERED_HEADING.search("## Bulk loads (PostgreSQL)\n")

    def test_measurements_are_not_rows(self):
        text = "its log row 1.55 ms; 50k rows 9.6 s; operation 3.5 ms"
        assert not any(p.search(text) for p in FORBIDDEN.values())


# --- every operation is documented -------------------------------------------------


@cache
def served_operations() -> frozenset[tuple[str, str]]:
    from cloudadmin.app import create_app
    from cloudadmin.config import Settings

    app = create_app(Settings(database_url="sqlite+aiosqlite://", secret_key="docs"))
    spec = app.openapi()
    return frozenset(
        (m.upper(), p) for p, ops in spec["paths"].items() for m in ops if m in METHODS
    )


def documented_operations(text: str) -> set[tuple[str, str]]:
    return {(m.group(1), m.group(2)) for m in OPERATION_HEADING.finditer(without_code(text))}


class TestEveryOperationIsDocumented:
    def test_each_served_operation_has_a_section(self):
        missing = served_operations() - documented_operations(text_of(INDEX))
        assert sorted(missing) == [], "add a '### METHOD /path' section to docs/api.md"

    def test_each_section_is_a_served_operation(self):
        stale = documented_operations(text_of(INDEX)) - served_operations()
        assert sorted(stale) == [], "docs/api.md describes operations the app does not serve"

    def test_a_removed_section_is_noticed(self):
        text = text_of(INDEX)
        removed = text.replace("### GET /healthz\n", "", 1)
        assert removed != text
        assert ("GET", "/healthz") in served_operations() - documented_operations(removed)

    def test_the_readme_names_the_contract(self):
        readme = text_of(ROOT / "README.md")
        assert "/openapi.json" in readme and "docs/api.md" in readme


# --- the import format's example is a valid document --------------------------------


def test_the_import_example_validates():
    from cloudadmin.importer.catalogue import survey
    from cloudadmin.importer.problems import Problems

    text = text_of(DOCS / "import.md")
    block = re.search(r"^### An example$.*?^```json\n(.*?)^```", text, re.M | re.S)
    assert block, "docs/import.md lost its example"
    problems = Problems()
    survey(json.loads(block.group(1)), problems)
    assert not problems, [(p.pointer, p.message) for p in problems.items]


def _nested_records(annotation: object) -> list[type]:
    """The record models a field's type holds (lists, unions and dicts included)."""
    from typing import get_args

    from cloudadmin.importer.records import Record

    if isinstance(annotation, type) and issubclass(annotation, Record):
        return [annotation]
    return [found for arg in get_args(annotation) for found in _nested_records(arg)]


def _field_names(model: type) -> set[str]:
    names: set[str] = set()
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        names.add(name)
        for nested in _nested_records(info.annotation):
            names |= _field_names(nested)
    return names


def _import_sections() -> dict[str, str]:
    """docs/import.md's '### ...' sections by the record kinds their heading names."""
    text = text_of(DOCS / "import.md")
    sections: dict[str, str] = {}
    parts = re.split(r"^### (.+)$", text, flags=re.M)
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        for word in re.findall(r"\w+", heading):
            sections[word] = body.split("\n## ", 1)[0]
    return sections


def test_the_import_format_names_every_kind_and_field():
    from cloudadmin.importer.kinds import KINDS

    sections = _import_sections()
    missing = []
    for kind in KINDS:
        section = sections.get(kind.key)
        if section is None:
            missing.append(f"a '### {kind.key}' section")
            continue
        # A field counts as described when its name is written as code in the section,
        # alone (`name`) or in an object's shape (`{id, name}`).
        written = {w for span in CODE_SPAN.finditer(section) for w in re.findall(r"\w+", span[2])}
        missing += [
            f"{kind.key}.{name}" for name in sorted(_field_names(kind.model)) if name not in written
        ]
    assert missing == [], "describe these in docs/import.md"
