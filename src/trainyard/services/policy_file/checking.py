"""Checks parsed policy data against the schema and reports every problem at once.

pydantic reports every value it refuses, but a model with a refused value is not built, so
the rule that needs the whole document (quotas fit their pools) would go unchecked until
every other problem is fixed. It is checked instead on what pydantic accepted: each refused
value counts as left out, which is what it defaults to."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from trainyard.domain.policy import Policy
from trainyard.services.policy_file import capacity
from trainyard.services.policy_file.problems import (
    KEY,
    KeyPath,
    Problem,
    describe,
    problems_of,
    raise_all,
)
from trainyard.services.policy_file.schema import (
    PolicyModel,
    PoolModel,
    QuotaModel,
    TeamModel,
    declared,
    keys_at,
)

Table = TypeVar("Table", PoolModel, QuotaModel)


def check(data: object, table_word: str, sections: Collection[str] = ()
          ) -> Policy | list[Problem]:
    """The policy, or what is wrong with it. `sections` are top-level keys that other tools
    keep in the file: allowed, and not read."""
    body = data
    if isinstance(data, dict):
        body = {key: value for key, value in data.items() if key not in sections}
    try:
        return PolicyModel.model_validate(body, context=declared(body)).policy()
    except ValidationError as exc:
        errors = _as_checked(problems_of(exc))
    if isinstance(body, dict) and not all(error["type"] in capacity.KINDS for error in errors):
        # The model was not built, so its quotas were not checked: check them on the rest.
        try:
            raise_all(capacity.quota_problems(*_accepted(body, errors)))
        except ValidationError as exc:
            for error in problems_of(exc):
                errors.insert(_place(error, errors, body), error)

    def keys(table: KeyPath) -> tuple[str, ...]:
        return keys_at(table) + (tuple(sections) if table == () else ())
    return [describe(error, table_word, keys) for error in errors]


def _place(error: ErrorDetails, errors: Sequence[ErrorDetails], body: dict[Any, Any]) -> int:
    """Where a quota's problem goes among the others: after those of its own entry and of the
    entries before it, as the schema checks them."""
    if error["type"] != "over_pool":
        return len(errors)  # the teams' quotas added up: last
    team, pool = str(error["loc"][1]), str(error["loc"][3])
    teams = [str(name) for name in body["teams"]]
    quotas = [str(name) for name in body["teams"][team]["quota"]]

    def later(loc: KeyPath) -> bool:
        if loc[:1] == ("queues",):
            return True
        if loc[:1] != ("teams",) or len(loc) < 2 or str(loc[1]) not in teams:
            return False
        if loc[1] != team:
            return teams.index(str(loc[1])) > teams.index(team)
        if loc[2:3] != ("quota",) or len(loc) < 4 or str(loc[3]) not in quotas:
            return False
        return quotas.index(str(loc[3])) > quotas.index(pool)
    return next((index for index, other in enumerate(errors) if later(other["loc"])),
                len(errors))


_UNKNOWN_KEY = ("extra_forbidden", "invalid_key")  # a key not in the schema; one not a string


def _as_checked(errors: Sequence[ErrorDetails]) -> list[ErrorDetails]:
    """pydantic's errors, in the order the schema documents its checks, which decides the
    order of problems written on one line: a table's unknown keys before its values (pydantic
    lists them last), and whether the teams section is a table before the pools' entries."""
    ordered: list[ErrorDetails] = []
    for error in errors:
        at, loc = len(ordered), error["loc"]
        if error["type"] in _UNKNOWN_KEY:
            table = loc[:-1]
            at = next((index for index, other in enumerate(ordered)
                       if len(other["loc"]) > len(table) and other["loc"][:len(table)] == table
                       and not (other["type"] in _UNKNOWN_KEY and other["loc"][:-1] == table)),
                      at)
        elif loc == ("teams",):
            at = next((index for index, other in enumerate(ordered)
                       if other["loc"][:1] == ("pools",) and len(other["loc"]) > 1), at)
        ordered.insert(at, error)
    return ordered


def _accepted(body: dict[Any, Any], errors: Sequence[ErrorDetails]
              ) -> tuple[dict[str, PoolModel], dict[str, TeamModel]]:
    """The pools and teams as written, less every value pydantic refused. A name that is not
    a name still names its entry; given both gpus and gpu_ids, a pool has no GPUs."""
    refused: set[KeyPath] = set()
    for error in errors:
        if error["type"] == "not_a_name" or error["loc"][-1:] == (KEY,):
            continue
        refused.add(error["loc"])
        if error["type"] == "gpus_twice":
            refused.add((*error["loc"][:-1], "gpus"))

    def kept(path: KeyPath, table: object) -> dict[str, Any]:
        if path in refused or not isinstance(table, dict):
            return {}
        return {key: value for key, value in table.items()
                if isinstance(key, str) and (*path, key) not in refused}

    def tables(path: KeyPath, section: object) -> dict[str, dict[Any, Any]]:
        return {name: value for name, value in kept(path, section).items()
                if isinstance(value, dict)}

    def built(model: type[Table], path: KeyPath, table: dict[Any, Any]) -> Table:
        values = {key: value for key, value in kept(path, table).items()
                  if key in model.model_fields}
        if isinstance(values.get("gpu_ids"), list):
            values["gpu_ids"] = [gpu for index, gpu in enumerate(values["gpu_ids"])
                                 if (*path, "gpu_ids", index) not in refused]
        return model.model_construct(**values)

    pools = {name: built(PoolModel, ("pools", name), pool)
             for name, pool in tables(("pools",), body.get("pools")).items()}
    teams = {name: TeamModel.model_construct(quota={
        pool: built(QuotaModel, ("teams", name, "quota", pool), quota)
        for pool, quota in tables(("teams", name, "quota"), team.get("quota")).items()})
        for name, team in tables(("teams",), body.get("teams")).items()}
    return pools, teams
