"""bulk_counts.RowCounter counts a bulk load's rows as the counter tables' GROUP BYs
would (bulk_counts.rebuild_counts), in memory that does not grow with the rows: the
keys go to a file, are counted run by run and merged. Small runs make many of them."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cloudadmin.billing.addendums import bulk_counts
from cloudadmin.billing.addendums.creation_days import day_number

COLUMNS = ("id", "client_id", "reseller_id", "status", "product_id", "created_at", "plan_id")
START = datetime(2024, 1, 1, tzinfo=UTC)

rows_strategy = st.lists(
    st.tuples(
        st.one_of(st.integers(1, 3), st.integers(1, 2**31 - 1)),  # client_id: few, or any
        st.sampled_from([None, 7, 2**31 - 1]),  # reseller_id
        st.sampled_from(["active", "paused", "stopped", "upcoming"]),
        st.one_of(st.integers(1, 2), st.integers(1, 40)),  # product_id
        st.integers(0, 400),  # hours after START
    ),
    max_size=300,
)


def expected(rows: list[tuple[Any, ...]]) -> bulk_counts.CounterRows | Any:
    counts = Counter(
        (client, -1 if reseller is None else reseller, status, product, ident % 16)
        for ident, client, reseller, status, product, _created, _plan in rows
    )
    totals = Counter((key[2], key[3], key[4]) for key in counts.elements())
    days: dict[tuple[int, int], list[int]] = {}
    for ident, *_rest, created, _plan in rows:
        day = days.setdefault((day_number(created), ident % 16), [0, ident, ident])
        day[0] += 1
        day[1], day[2] = min(day[1], ident), max(day[2], ident)
    return (
        [(*key, n) for key, n in sorted(counts.items())],
        [(*key, n) for key, n in sorted(totals.items())],
        [(*key, *bounds) for key, bounds in sorted(days.items())],
    )


def counted(rows: list[tuple[Any, ...]], run_keys: int, batch: int) -> Any:
    counter = bulk_counts.RowCounter(COLUMNS, run_keys=run_keys)
    try:
        for start in range(0, len(rows), batch):
            counter.add(rows[start : start + batch])
        found = counter.rows()
        lines = found.counts.read().decode().splitlines()
    finally:
        counter.close()
    counts = []
    for line in lines:
        client, reseller, status, product, shard, n = line.split("\t")
        counts.append((int(client), int(reseller), status, int(product), int(shard), int(n)))
    return counts, found.totals, found.days


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.integers(1, 50), st.integers(1, 64), st.randoms())
def test_the_counters_of_any_rows_in_any_runs(
    drawn: list[tuple[Any, ...]], run_keys: int, batch: int, rng: Any
) -> None:
    ids = rng.sample(range(1, 10 * len(drawn) + 2), len(drawn))
    if rng.random() < 0.5:
        ids.sort()  # an export's order, which the days' bounds take a shortcut for
    rows = [
        (ident, client, reseller, status, product, START + timedelta(hours=hours), 1)
        for ident, (client, reseller, status, product, hours) in zip(ids, drawn, strict=True)
    ]
    assert counted(rows, run_keys, batch) == expected(rows)


def test_many_runs_of_many_clients_merge_into_key_order() -> None:
    """Each client's counters once, in the key's order, summed across 1,000 runs."""
    rows = [
        (ident, 1 + ident * 7919 % 97, None if ident % 3 else 5, "active", ident % 2 + 1,
         START + timedelta(minutes=ident), 1)
        for ident in range(1, 20_001)
    ]  # fmt: skip
    counts, totals, days = counted(rows, run_keys=20, batch=500)
    assert (counts, totals, days) == expected(rows)
    assert len({row[0] for row in counts}) == 97


def test_text_that_copy_gives_a_meaning_is_escaped() -> None:
    rows = [(1, 2, None, "odd\tstatus\\n", 3, START, 1)]
    counter = bulk_counts.RowCounter(COLUMNS)
    counter.add(rows)
    try:
        assert counter.rows().counts.read() == b"2\t-1\todd\\tstatus\\\\n\t3\t1\t1\n"
    finally:
        counter.close()
