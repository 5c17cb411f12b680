"""Hot reads run on the driver's own cursor, in the caller's connection: what clients poll
(a listing's page, its jobs' predictions and needs).

For a read of one row or a few, SQLAlchemy's execution (its context, a cache lookup, the
late rendering of a list expanded into an IN at every call, the result's set-up) costs
several times what SQLite spends on the query. Here the statement is compiled once for the
dialect, the keys of its parameters and each list's length rounded up to a power of two
(store/driver_writes.py makes the plan), and the rows come back as tuples converted by the
very result processors SQLAlchemy would use, keyed as its rows are: by attribute, by
position and by `_mapping`.

What the plan cannot carry (a value rendered into the SQL, a list longer than EXPANDED_MAX,
a column name that cannot be an attribute) goes through `Connection.execute` as before,
without running here first. Statements on this path fire no SQLAlchemy execute
events and are not echoed."""

from __future__ import annotations

import keyword
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Executable
from sqlalchemy.engine import Dialect

from trainyard.store.driver_writes import Plan, as_sqlalchemy_errors, plan_of

# A list expanded into an IN is compiled for the next power of two at or above its length,
# the items past its end repeating its last, so that a statement has a handful of plans
# rather than one per length; a longer list goes through SQLAlchemy, its rows outweighing
# what a plan saves. Covers ListJobs' default page (100).
EXPANDED_MAX = 128

Processor = Callable[[Any], Any] | None
RowMaker = Callable[[Sequence[Any]], Any]
_ROW_TYPE = "row type"  # Plan.readers' entry for the plan's row type (None: names unusable)


def rows(conn: Connection, statement: Executable, params: dict[str, Any]) -> list[Any]:
    """The statement's rows, as SQLAlchemy's `.all()` gives them to a caller that reads
    columns by name, by position or through `_mapping`."""
    plan = _plan(conn.dialect, statement, params)
    if plan is None or _row_type(plan) is None:
        return list(conn.execute(statement, params).all())
    with as_sqlalchemy_errors(conn, plan.sql, params) as cursor:
        cursor.execute(plan.sql, plan.parameters(params))
        found = cursor.fetchall()
        make = _maker(plan, conn.dialect, cursor.description)
    if make is None:  # not the columns compiled for: SQLAlchemy reads it as it would
        return list(conn.execute(statement, params).all())
    return [make(row) for row in found]


def scalars(conn: Connection, statement: Executable, params: dict[str, Any]) -> list[Any]:
    """The first column of the statement's rows."""
    return [row[0] for row in rows(conn, statement, params)]


def _plan(dialect: Dialect, statement: Executable, params: dict[str, Any]) -> Plan | None:
    if not getattr(statement, "is_select", False):
        return None
    keys = tuple(params)
    lengths = tuple(_bucket(len(v)) if isinstance(v, list | tuple) else -1
                    for v in params.values())
    if any(length > EXPANDED_MAX for length in lengths):
        return None
    return plan_of(statement, dialect, keys, lengths)


def _bucket(length: int) -> int:
    """The length a list's plan is compiled for: 0, or the next power of two."""
    return 1 << (length - 1).bit_length() if length > 0 else 0


def _maker(plan: Plan, dialect: Dialect, description: Any) -> RowMaker | None:
    """How a row of this plan's result, of these column types, becomes the caller's."""
    type_codes = tuple(column[1] for column in description or ())
    found = plan.readers.get(type_codes, False)
    if found is False:
        found = plan.readers[type_codes] = _make_maker(plan, dialect, type_codes)
    return found  # type: ignore[no-any-return]


def _make_maker(plan: Plan, dialect: Dialect, type_codes: tuple[Any, ...]) -> RowMaker | None:
    columns = plan.compiled._result_columns  # noqa: SLF001 - what SQLAlchemy's rows read
    row_type = _row_type(plan)
    if row_type is None or len(columns) != len(type_codes):
        return None
    processors: list[Processor] = [
        column.type._cached_result_processor(dialect, code)  # noqa: SLF001
        for column, code in zip(columns, type_codes, strict=True)]
    if not any(processors):
        return row_type._make  # type: ignore[no-any-return]
    pairs = list(enumerate(processors))

    def make(raw: Sequence[Any]) -> Any:
        values = list(raw)
        for i, process in pairs:
            if process is not None:
                values[i] = process(values[i])
        return row_type._make(values)

    return make


def _row_type(plan: Plan) -> Any:
    """The plan's rows' type, named as SQLAlchemy names its columns; None where a name
    cannot be an attribute (then SQLAlchemy reads it, and nothing runs here)."""
    if _ROW_TYPE not in plan.readers:
        plan.readers[_ROW_TYPE] = _new_row_type(plan)
    return plan.readers[_ROW_TYPE]


def _new_row_type(plan: Plan) -> Any:
    names = [column.keyname for column in plan.compiled._result_columns]  # noqa: SLF001
    if not names or len(set(names)) != len(names) or \
            not all(name.isidentifier() and not keyword.iskeyword(name) and
                    not name.startswith("_") for name in names):
        return None
    base = namedtuple("DriverRow", names)  # type: ignore[misc]  # noqa: PYI024

    class DriverRow(base):  # type: ignore[misc, valid-type]
        """A row read by name, by position, or through `_mapping` as SQLAlchemy's Row is."""

        __slots__ = ()

        @property
        def _mapping(self) -> dict[str, Any]:
            return dict(zip(self._fields, self, strict=True))

    return DriverRow
