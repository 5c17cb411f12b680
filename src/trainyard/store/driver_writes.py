"""Hot writes run on the driver's own cursor, inside the caller's SQLAlchemy transaction.

SQLAlchemy spends more CPU on each execution than SQLite spends on a one-row insert: an
execution context, a cache lookup, each row's parameters built through dictionaries and its
result set up. For a statement run many times with rows of one set of keys, all of that is
worked out once here (the SQL for the dialect, where each value goes, each column's type
conversion) and the rows go straight to the driver's executemany.

Only what needs none of SQLAlchemy's run-time work takes this path: a column the rows leave
out may have a plain default value, not one computed by a function; no RETURNING, no value
rendered into the SQL, no name escaped in it; a list expanded into an IN only where the
caller says its length (the hot reads, store/driver_reads.py, whose plans are made here
too); every row of a batch has the same keys. The rest goes through `Connection.execute`
as before (`run_many` answers False: the caller does it).

`run_one` (and `execute`, which falls back to SQLAlchemy itself) runs one row the same way:
a job's moves, whose compare-and-set reads the rows it matched from the driver's cursor;
`execute_many` runs many rows so (a metrics ingest's points). Their driver errors are raised
as SQLAlchemy's; `run_many`'s are the driver's own, for the group commit, which retries each
writer alone through SQLAlchemy. Statements on this path fire no SQLAlchemy execute events
and are not echoed."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Executable
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, SQLAlchemyError, StatementError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement

CACHE_LIMIT = 256  # (statement, dialect, keys) entries: the hot writes are a handful
_UNSET = object()


@dataclass(frozen=True)
class Plan:
    """One statement for one dialect and one set of row keys (and, for a list expanded into
    an IN, its length): its SQL, and for each parameter in the SQL's order the row key it
    reads (or the statement's own value), the item of that key's list where it is one, and
    the type's conversion."""

    sql: str
    names: tuple[str, ...]  # the parameters, in the SQL's order (positional styles)
    sources: tuple[str, ...]  # the row key of each parameter ("" where the statement's own)
    # The item of the row key's list it takes (-1: the value itself); past a shorter list's
    # end, its last: a list is expanded to its length's bucket (an IN ignores repeats).
    items: tuple[int, ...]
    constants: tuple[Any, ...]  # the statement's own value of each parameter
    converters: tuple[Callable[[Any], Any] | None, ...]
    positional: bool
    compiled: SQLCompiler  # for a read's columns: their names and types
    # A read's row makers, by its result's column type codes (store/driver_reads.py).
    readers: dict[tuple[Any, ...], Any] = field(default_factory=dict, compare=False)

    def parameters(self, row: dict[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        values = [(row[source] if item < 0 else _item(row[source], item)) if source else
                  constant for source, item, constant in zip(self.sources, self.items,
                                                             self.constants, strict=True)]
        for i, convert in enumerate(self.converters):
            if convert is not None:  # None too, as SQLAlchemy does: JSON stores it as null
                values[i] = convert(values[i])
        return tuple(values) if self.positional else dict(zip(self.names, values, strict=True))


def _item(values: Sequence[Any], item: int) -> Any:
    return values[item] if item < len(values) else values[-1]


# Keyed by the statement and dialect themselves, not their ids: a key keeps them alive, so
# no other can come to share it.
_plans: dict[tuple[Executable, Dialect, tuple[str, ...], tuple[int, ...]], Plan | None] = {}
_plans_lock = threading.Lock()


def plan_of(statement: Executable, dialect: Dialect, keys: tuple[str, ...],
            lengths: tuple[int, ...] = ()) -> Plan | None:
    """The statement compiled for rows of these keys, or None where SQLAlchemy must run it.
    `lengths`: for each key in order, the length its list expanded into an IN is compiled
    for (at least the list's own), or -1 where its value is not one (none given: no key's
    is)."""
    cache_key = (statement, dialect, keys, lengths)  # an engine's own dialect: its settings too
    found = _plans.get(cache_key, _UNSET)
    if found is not _UNSET:
        return found  # type: ignore[return-value]
    plan = _compile(statement, dialect, keys, dict(zip(keys, lengths, strict=False)))
    with _plans_lock:
        if len(_plans) >= CACHE_LIMIT:
            _plans.clear()  # statements built at run time: start again rather than grow
        _plans[cache_key] = plan
    return plan


def _compile(statement: Executable, dialect: Dialect, keys: tuple[str, ...],
             lengths: dict[str, int]) -> Plan | None:
    if not isinstance(statement, ClauseElement):
        return None
    compiled = statement.compile(dialect=dialect, column_keys=list(keys),
                                 for_executemany=True)
    if not isinstance(compiled, SQLCompiler):
        return None
    if compiled.update_prefetch or compiled.returning or compiled.literal_execute_params or \
            compiled.escaped_bind_names:
        # Defaults computed in Python, RETURNING, values rendered in the SQL, or names the
        # paramstyle needs escaped in the SQL but not in the parameters.
        return None
    sql, names, origins = compiled.string, _names(compiled), {}
    processors: dict[str, Callable[[Any], Any] | None] = {}
    if compiled.post_compile_params:
        # Lists expanded into an IN: the SQL for these lengths, each item a parameter.
        expanded = _expanded(compiled, keys, lengths)
        if expanded is None:
            return None
        sql, names, origins, processors = expanded
    # A column the rows leave out whose default is a plain value takes that value, as
    # SQLAlchemy would give it; one computed by a function is left to SQLAlchemy.
    defaults: dict[str, Any] = {}
    for column in compiled.insert_prefetch:
        default = column.default
        if default is None or not default.is_scalar:
            return None
        defaults[column.key] = default.arg  # type: ignore[attr-defined]
    sources: list[str] = []
    items: list[int] = []
    constants: list[Any] = []
    converters: list[Callable[[Any], Any] | None] = []
    wanted = set(keys)
    for name in names:
        if name in origins:
            bind_name, item = origins[name]
            sources.append(bind_name)
            items.append(item)
            constants.append(None)
            converters.append(processors.get(name))
            continue
        bind = compiled.binds[name]
        if bind.expanding or bind.callable is not None:
            return None
        items.append(-1)
        if name in wanted:
            sources.append(name)
            constants.append(None)
        elif name in defaults:
            sources.append("")
            constants.append(defaults[name])
        elif bind.value is not None or not bind.required:
            sources.append("")
            constants.append(bind.value)
        else:
            return None  # a parameter the rows do not give: SQLAlchemy says so
        converters.append(bind.type.dialect_impl(dialect).bind_processor(dialect))
    return Plan(sql, names, tuple(sources), tuple(items), tuple(constants), tuple(converters),
                compiled.positional, compiled)


def _names(compiled: SQLCompiler) -> tuple[str, ...]:
    """The statement's parameters, in its SQL's order where the paramstyle is positional."""
    if compiled.positional:
        assert compiled.positiontup is not None
        return tuple(compiled.positiontup)
    return tuple(dict.fromkeys(compiled.bind_names.values()))


def _expanded(compiled: SQLCompiler, keys: tuple[str, ...], lengths: dict[str, int]
              ) -> tuple[str, tuple[str, ...], dict[str, tuple[str, int]],
                         dict[str, Callable[[Any], Any] | None]] | None:
    """The SQL with each row key's list expanded to its length in `lengths`, its
    parameters in order, where each expanded one comes from (the key, the item), and their
    conversions; None where a late-rendered parameter is not such a list."""
    for bind in compiled.post_compile_params:
        name = compiled.bind_names[bind]
        if not bind.expanding or name not in keys or lengths.get(name, -1) < 0 or \
                bind.literal_execute or bind.type._is_tuple_type:  # noqa: SLF001
            return None
    # Stand-in values of the right lengths: the SQL depends on them only through that.
    stand_in = {key: [None] * lengths[key] if lengths.get(key, -1) >= 0 else None
                for key in keys}
    try:
        state = compiled.construct_expanded_state(stand_in, escape_names=False)
    except SQLAlchemyError:  # what SQLAlchemy's own execution then says of them
        return None
    origins = {expanded: (name, i) for name, names in state.parameter_expansion.items()
               for i, expanded in enumerate(names)}
    names = tuple(state.positiontup) if compiled.positional and state.positiontup is not None \
        else tuple(state.parameters)
    return state.statement, names, origins, dict(state.processors)


def run_one(conn: Connection, statement: Executable, row: dict[str, Any]) -> int | None:
    """Run the statement once, for one row, on the driver's cursor, in the connection's
    transaction: the rows it matched (an update's or a delete's), or None, having run
    nothing, where it must go through SQLAlchemy."""
    plan = plan_of(statement, conn.dialect, tuple(row))
    if plan is None:
        return None
    with as_sqlalchemy_errors(conn, plan.sql, row) as cursor:
        cursor.execute(plan.sql, plan.parameters(row))
        return int(cursor.rowcount)


@contextlib.contextmanager
def as_sqlalchemy_errors(conn: Connection, sql: str, rows: Any) -> Iterator[Any]:
    """A driver cursor, in the connection's transaction, whose errors reach the caller as
    SQLAlchemy's execute raises them."""
    driver_error = conn.dialect.loaded_dbapi.Error
    cursor = None
    try:
        cursor = _cursor(conn)
        yield cursor
    except driver_error as exc:
        raise _as_sqlalchemys(conn, exc, sql, rows, cursor) from exc
    except Exception as exc:
        # A value its column's type cannot take, found by our conversion or by the
        # driver's own (psycopg serializes JSON as it executes): StatementError, as
        # SQLAlchemy raises where it converts the value itself, on both dialects.
        raise StatementError(f"({type(exc).__name__}) {exc}", sql, rows, exc) from exc
    finally:
        if cursor is not None:
            with contextlib.suppress(driver_error):  # its connection may be closed now
                cursor.close()


def _as_sqlalchemys(conn: Connection, exc: Exception, sql: str, parameters: Any,
                    cursor: Any) -> BaseException:
    """The driver's error as SQLAlchemy's execute raises it (its IntegrityError,
    OperationalError...), so that callers and the API's sentences for a database away or a
    full disk see one kind; a lost connection is invalidated, as SQLAlchemy does, so that
    the pool does not hand it out again (the pool's other connections are left to its
    pre-ping, where the engine has one: PostgreSQL's)."""
    dialect = conn.dialect
    lost = dialect.is_disconnect(exc, conn.connection.dbapi_connection, cursor)
    if lost:
        conn.invalidate(exc)
    wrapped = DBAPIError.instance(sql, parameters, exc, dialect.loaded_dbapi.Error,
                                  hide_parameters=conn.engine.hide_parameters,
                                  connection_invalidated=lost, dialect=dialect)
    return wrapped if isinstance(wrapped, BaseException) else exc


def execute_many(conn: Connection, statement: Executable,
                 rows: Sequence[dict[str, Any]]) -> None:
    """Run a write for each row on the driver's cursor where it may (rows of one set of
    keys, a statement that needs none of SQLAlchemy's run-time work), else through
    SQLAlchemy; its errors either way are SQLAlchemy's."""
    if not rows:
        return
    plan = _plan_of_rows(conn, statement, rows)
    if plan is None:
        conn.execute(statement, list(rows))
        return
    with as_sqlalchemy_errors(conn, plan.sql, rows) as cursor:
        cursor.executemany(plan.sql, [plan.parameters(row) for row in rows])


def execute(conn: Connection, statement: Executable, row: dict[str, Any]) -> int:
    """Run a write of one row on the driver's cursor where it may (run_one), else through
    SQLAlchemy: the rows it matched either way."""
    matched = run_one(conn, statement, row)
    if matched is None:
        matched = conn.execute(statement, row).rowcount
    return matched


def _cursor(conn: Connection) -> Any:
    # The pooled connection's driver connection: its transaction is the one SQLAlchemy
    # commits (psycopg begins it at the first statement, Python's sqlite3 at the first
    # write; a write here begins it just as one through SQLAlchemy would).
    driver = conn.connection.driver_connection
    assert driver is not None
    return driver.cursor()


def run_many(conn: Connection, statement: Executable, rows: Sequence[dict[str, Any]]) -> bool:
    """Run the statement for each row on the driver's cursor, in the connection's
    transaction. False, having run nothing, where it must go through SQLAlchemy (the rows'
    keys differ, or the statement needs its run-time work)."""
    plan = _plan_of_rows(conn, statement, rows)
    if plan is None:
        return False
    cursor = _cursor(conn)
    try:
        cursor.executemany(plan.sql, [plan.parameters(row) for row in rows])
    finally:
        cursor.close()
    return True


def _plan_of_rows(conn: Connection, statement: Executable,
                  rows: Sequence[dict[str, Any]]) -> Plan | None:
    """The plan for these rows (not empty), or None where their keys differ or the statement
    must go through SQLAlchemy."""
    first = rows[0].keys()
    if any(row.keys() != first for row in rows):
        return None
    return plan_of(statement, conn.dialect, tuple(first))
