"""Where the CLI and SDK find the server's address, the API token and the CA certificate:
a private TOML file, overridden by environment variables."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

CONFIG_PATH_ENV = "TRAINYARD_CONFIG"
ENV_VARS = {"server": "TRAINYARD_SERVER", "token": "TRAINYARD_TOKEN",
            "ca_cert": "TRAINYARD_CA_CERT"}


class CredentialsError(Exception):
    """The credentials could not be read or written; the message is for the user and never
    holds the token."""


@dataclass(frozen=True, repr=False)
class Credentials:
    server: str = ""  # host:port of the gRPC server
    token: str = ""
    ca_cert: str = ""  # path to a PEM file the server's certificate must chain to

    def __repr__(self) -> str:
        # Reprs end up in logs and tracebacks; the token must not.
        token = "<set>" if self.token else "''"
        return f"Credentials(server={self.server!r}, token={token}, ca_cert={self.ca_cert!r})"


KEYS = tuple(f.name for f in fields(Credentials))


def default_path() -> Path:
    return Path.home() / ".trainyard" / "config.toml"


def config_path(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ[CONFIG_PATH_ENV]) if environ.get(CONFIG_PATH_ENV) else default_path()


def load(environ: Mapping[str, str] = os.environ, path: Path | None = None) -> Credentials:
    """The config file's values (none if it is missing), then the environment's on top."""
    values = _read(path if path is not None else config_path(environ))
    for key, name in ENV_VARS.items():
        if environ.get(name):  # an empty variable counts as unset, as in most shells' idioms
            values[key] = environ[name]
    return Credentials(**values)


def _read(path: Path) -> dict[str, str]:
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise CredentialsError(f"cannot read {path}: {exc.strerror}") from exc
    _check_private(path, before)
    try:
        # O_NOFOLLOW and the inode check: the file read is the file checked, not a swap.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise CredentialsError(f"cannot read {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as file:
        now = os.fstat(file.fileno())
        if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            raise CredentialsError(f"{path} changed while it was being read; try again")
        _check_private(path, now)
        # "from None": both errors carry the whole document (.doc, .object), token and all.
        try:
            document = tomllib.load(file)
        except tomllib.TOMLDecodeError as exc:  # its message gives the line and column
            raise CredentialsError(f"{path} is not valid TOML: {exc}") from None
        except UnicodeDecodeError:
            raise CredentialsError(f"{path} is not UTF-8 text") from None
    values: dict[str, str] = {}
    for key, value in document.items():
        # Name the key, never the value: the value may be the token.
        if key not in KEYS:
            raise CredentialsError(f"{path} has an unknown key {key!r}; "
                                   f"the known keys are {', '.join(KEYS)}")
        if not isinstance(value, str):
            raise CredentialsError(f"{path}: {key} must be a string, "
                                   f"not {type(value).__name__}")
        values[key] = value
    return values


def _check_private(path: Path, st: os.stat_result) -> None:
    """The file holds a secret: refuse it if anyone but its owner, the current user, could
    read or change it (as ssh does with private keys)."""
    if stat.S_ISLNK(st.st_mode):
        raise CredentialsError(f"{path} is a symbolic link; the credentials file must be a "
                               "regular file, so that its own permissions are the ones that count")
    if not stat.S_ISREG(st.st_mode):
        raise CredentialsError(f"{path} is not a regular file")
    if st.st_uid != os.getuid():
        raise CredentialsError(f"{path} is owned by uid {st.st_uid}, not by the current user "
                               f"(uid {os.getuid()}); it holds a secret, so it must be yours")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise CredentialsError(f"{path} has mode {mode:04o}, which lets other users at the "
                               f"token in it; fix it with: chmod 600 {shlex.quote(str(path))}")


def save(creds: Credentials, path: Path | None = None) -> Path:
    """Write creds as the config file, atomically and readable by the owner only."""
    path = path if path is not None else config_path()
    lines = ["# Trainyard client credentials. This file holds a secret: keep it mode 0600."]
    for key in KEYS:
        lines.append(f"{key} = {_toml_string(key, getattr(creds, key))}")
    data = ("\n".join(lines) + "\n").encode()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise CredentialsError(f"cannot create the directory {path.parent}: "
                               f"{exc.strerror}") from exc
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        # Created 0600 from the start: the token is never in a file others could open.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)  # readers see the old file or the new one, never half of one
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise CredentialsError(f"cannot write {path}: {exc.strerror}") from exc
    _fsync_dir(path.parent)
    return path


def _toml_string(key: str, value: str) -> str:
    if not isinstance(value, str):
        raise CredentialsError(f"{key} must be a string, not {type(value).__name__}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise CredentialsError(f"{key} holds a control character; it cannot be saved")
    # With control characters gone, JSON escapes only '"' and '\\', the same way a TOML basic
    # string does; ensure_ascii=False because TOML has no escapes for surrogate pairs.
    return json.dumps(value, ensure_ascii=False)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable; best effort, as not every file system allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
