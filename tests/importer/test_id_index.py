"""IdIndex (importer/id_index.py) answers as the dict of ids it stands for, whatever
order the ids come in, and keeps a run of rising ids in a few numbers."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cloudadmin.importer.id_index import IdIndex

IDS = st.one_of(
    st.integers(min_value=-5, max_value=60),
    st.integers(min_value=2**63 - 3, max_value=2**63 + 1),
    st.sampled_from(["7", "x"]),  # ids are integers or texts (never bools)
)


def noted(index: IdIndex, truth: dict[Any, int], ident: Any, at: int) -> None:
    """How the catalogue notes a record: look first, note if new."""
    if ident in truth:
        assert ident in index and index[ident] == truth[ident]
    else:
        assert ident not in index
        index[ident] = at
        truth[ident] = at


@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("one"), IDS),
            st.tuples(st.just("run"), st.integers(min_value=-3, max_value=70), st.integers(0, 9)),
        ),
        max_size=40,
    )
)
def test_answers_as_a_dict(steps: list[tuple[Any, ...]]) -> None:
    index, truth, at = IdIndex(), dict[Any, int](), 0
    for step in steps:
        if step[0] == "one":
            noted(index, truth, step[1], at)
            at += 1
            continue
        idents = list(range(step[1], step[1] + step[2]))
        if index.extend(idents, at):
            assert not any(i in truth for i in idents)
            truth.update({ident: at + k for k, ident in enumerate(idents)})
        else:
            for k, ident in enumerate(idents):
                noted(index, truth, ident, at + k)
        at += len(idents)
    assert len(index) == len(truth)
    for ident, at in truth.items():
        assert ident in index and index[ident] == at and index.get(ident) == at
    assert index.get("absent") is None and "absent" not in index


def test_ids_rising_one_by_one_are_one_run() -> None:
    index = IdIndex()
    for start in range(0, 1_000_000, 5_000):
        assert index.extend(list(range(start + 1, start + 5_001)), start)
    assert len(index._starts) == 1 and len(index) == 1_000_000
    assert index[1] == 0 and index[1_000_000] == 999_999 and 0 not in index
    assert not index.extend([5, 6], 1_000_000)  # below the run: noted one by one
