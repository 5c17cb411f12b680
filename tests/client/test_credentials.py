"""Client credentials: a private TOML file, environment overrides, and a token kept secret."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from trainyard.client.credentials import CONFIG_PATH_ENV, Credentials, CredentialsError, load, save

TOKEN = "ty_secret_4f9a0c"


def write_config(path: Path, text: str, mode: int = 0o600) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    path.chmod(mode)  # os.open's mode went through the umask
    return path


def test_a_missing_file_gives_empty_credentials(tmp_path: Path) -> None:
    assert load({}, tmp_path / "absent.toml") == Credentials()


def test_the_environment_overrides_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path / "config.toml",
                        f'server = "file:50051"\ntoken = "{TOKEN}"\nca_cert = "/etc/ca.pem"\n')
    assert load({}, path) == Credentials("file:50051", TOKEN, "/etc/ca.pem")
    env = {"TRAINYARD_SERVER": "env:443", "TRAINYARD_TOKEN": "from-env", "TRAINYARD_CA_CERT": ""}
    # An empty variable counts as unset, so ca_cert still comes from the file.
    assert load(env, path) == Credentials("env:443", "from-env", "/etc/ca.pem")
    # Without an explicit path, TRAINYARD_CONFIG names the file.
    assert load({CONFIG_PATH_ENV: str(path)}).server == "file:50051"


def test_a_file_others_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = write_config(tmp_path / "config.toml", f'token = "{TOKEN}"\n', mode=0o644)
    with pytest.raises(CredentialsError) as refused:
        load({}, path)
    message = str(refused.value)
    assert "mode 0644" in message and f"chmod 600 {path}" in message
    assert TOKEN not in message
    path.chmod(0o600)
    assert load({}, path).token == TOKEN


def test_a_symlink_is_refused_even_to_a_private_file(tmp_path: Path) -> None:
    target = write_config(tmp_path / "real.toml", f'token = "{TOKEN}"\n')
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    with pytest.raises(CredentialsError, match="is a symbolic link"):
        load({}, link)


def test_a_file_owned_by_someone_else_is_refused(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(tmp_path / "config.toml", f'token = "{TOKEN}"\n')
    owner = path.stat().st_uid
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)  # as if another user ran the CLI
    with pytest.raises(CredentialsError, match=f"owned by uid {owner}, not by the current user"):
        load({}, path)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir(mode=0o700)
    with pytest.raises(CredentialsError, match="is not a regular file"):
        load({}, tmp_path / "config.toml")


def test_bad_toml_is_refused_with_its_line(tmp_path: Path) -> None:
    path = write_config(tmp_path / "config.toml", f'server = "a:1"\ntoken = "{TOKEN}\n')
    with pytest.raises(CredentialsError, match=r"config\.toml is not valid TOML: .*line 2") as bad:
        load({}, path)
    assert TOKEN not in str(bad.value) and bad.value.__cause__ is None


def test_unknown_keys_and_wrong_types_are_named(tmp_path: Path) -> None:
    path = write_config(tmp_path / "config.toml", f'sever = "a:1"\ntoken = "{TOKEN}"\n')
    with pytest.raises(CredentialsError, match="unknown key 'sever'"):
        load({}, path)
    path.unlink()
    write_config(path, "token = 12345\n")
    with pytest.raises(CredentialsError, match="token must be a string") as wrong:
        load({}, path)
    assert "12345" not in str(wrong.value)


def test_save_then_load_round_trips_in_a_private_file(tmp_path: Path) -> None:
    creds = Credentials(server="trainyard.internal:50051", token='t"\\ok é',
                        ca_cert="/home/me/.trainyard/ca.pem")
    path = save(creds, tmp_path / "new" / "config.toml")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load({}, path) == creds
    # Saving again replaces the file whole and leaves no temporary file behind.
    save(Credentials(server="other:1"), path)
    assert load({}, path) == Credentials(server="other:1")
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]


def test_control_characters_are_not_saved(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match="token holds a control character"):
        save(Credentials(token="line\nbreak"), tmp_path / "config.toml")
    assert not (tmp_path / "config.toml").exists()


def test_the_token_stays_out_of_reprs() -> None:
    creds = Credentials(server="s:1", token=TOKEN, ca_cert="ca.pem")
    assert TOKEN not in repr(creds) and TOKEN not in str(creds)
    assert "token=<set>" in repr(creds) and "server='s:1'" in repr(creds)
    assert "token=''" in repr(Credentials())
