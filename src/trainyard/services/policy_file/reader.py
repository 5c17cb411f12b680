"""Reads a policy file's text, TOML or YAML, into plain data, and remembers the line each key
path is written on, for messages. Text that is not valid TOML or YAML is a `PolicyError`."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

import yaml

from trainyard.services.policy_file.problems import KeyPath, PolicyError, Problem

_TOML_KEY = r"""(?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)"""
_TOML_HEADER = re.compile(rf"\s*\[\[?\s*({_TOML_KEY}(?:\s*\.\s*{_TOML_KEY})*)\s*\]\]?\s*(?:#.*)?$")
_TOML_ASSIGN = re.compile(rf"\s*({_TOML_KEY}(?:\s*\.\s*{_TOML_KEY})*)\s*=")
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


@dataclass
class Reading:
    data: object
    table_word: str  # what the format calls a mapping
    lines: dict[KeyPath, int] = field(default_factory=dict)  # where each key path is written
    problems: list[Problem] = field(default_factory=list)  # what the parser alone would hide


def read_toml(text: str, source: str) -> Reading:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)  # tomllib puts the position at the end: "... (at line 3, column 9)"
        at = _TOML_AT.search(message)
        if at is None:
            raise PolicyError([f"{source}: {message}"]) from exc
        raise PolicyError([f"{source}, line {at[1]}: {message[:at.start()]} "
                           f"(column {at[2]})"]) from exc
    except ValueError as exc:  # an integer past Python's digit limit, before any position
        raise PolicyError([f"{source}: a number has too many digits ({exc})"[:300]]) from None
    return Reading(data, "table", _toml_lines(text))


def _toml_keys(dotted: str) -> tuple[str, ...]:
    return tuple(key[1:-1] if key[0] in "\"'" else key
                 for key in re.findall(_TOML_KEY, dotted))


def _toml_lines(text: str) -> dict[KeyPath, int]:
    """Where each key path is first written. tomllib keeps no positions, so this scans for
    `[table]` headers and `key =` lines, which covers the layouts policy files use."""
    lines: dict[KeyPath, int] = {}
    table: tuple[str, ...] = ()
    in_string = False
    for number, line in enumerate(text.splitlines(), start=1):
        quotes = line.count('"""') + line.count("'''")
        if in_string:  # text inside a multi-line string may look like a key
            in_string = quotes % 2 == 0
            continue
        header = _TOML_HEADER.match(line)
        assign = None if header else _TOML_ASSIGN.match(line)
        if header:
            table = _toml_keys(header[1])
            start, path = 1, table
        elif assign:
            start, path = len(table) + 1, table + _toml_keys(assign[1])
        else:
            start, path = 1, ()
        for end in range(start, len(path) + 1):
            lines.setdefault(path[:end], number)
        in_string = quotes % 2 == 1
    return lines


def read_yaml(text: str, source: str) -> Reading:
    loader = yaml.SafeLoader(text)
    reading = Reading(None, "mapping")
    try:
        node = loader.get_single_node()
        if node is None:
            return reading
        # Walk the nodes before constructing, which flattens merge keys and hides duplicates.
        _yaml_lines(node, (), reading, set())
        reading.data = loader.construct_document(node)
        return reading
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = exc.problem or "not valid YAML"
        if exc.context:
            message += f" ({exc.context}"
            if exc.context_mark and mark and exc.context_mark.line != mark.line:
                message += f" from line {exc.context_mark.line + 1}"
            message += ")"
        where = f"{source}, line {mark.line + 1}" if mark else source
        raise PolicyError([f"{where}: {message}"]) from exc
    except yaml.YAMLError as exc:
        raise PolicyError([f"{source}: {exc}"]) from exc
    except ValueError as exc:  # an integer past Python's digit limit
        raise PolicyError([f"{source}: a number has too many digits ({exc})"[:300]]) from None
    finally:
        loader.dispose()


def _yaml_lines(node: yaml.Node, path: KeyPath, reading: Reading, seen: set[int]) -> None:
    if id(node) in seen:  # an alias: already walked, and it may refer to itself
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key_path = (*path, key_node.value)
            line = key_node.start_mark.line + 1
            if key_node.value in keys:  # PyYAML would silently keep the last one
                reading.problems.append(Problem(
                    key_path, f"duplicate key (first on line {reading.lines[key_path]})", line))
                continue
            keys.add(key_node.value)
            reading.lines[key_path] = line
            _yaml_lines(value_node, key_path, reading, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            reading.lines.setdefault((*path, index), item.start_mark.line + 1)
            _yaml_lines(item, (*path, index), reading, seen)
