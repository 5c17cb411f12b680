"""Where the Docker pool and image pinning find the engine (no engine needed: nothing
connects)."""

from __future__ import annotations

import docker.errors
import pytest

from trainyard.executors.docker import engine_address


def test_a_given_address_is_used_whatever_docker_host_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///elsewhere.sock")
    assert engine_address("unix:///given.sock") == {"base_url": "unix:///given.sock"}


def test_without_one_docker_host_names_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///elsewhere.sock")
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    monkeypatch.delenv("DOCKER_CERT_PATH", raising=False)
    assert engine_address("")["base_url"] == "unix:///elsewhere.sock"


def test_tls_settings_the_sdk_refuses_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2376")
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    monkeypatch.setenv("DOCKER_CERT_PATH", "/nonexistent/certs")
    with pytest.raises(docker.errors.DockerException) as caught:
        engine_address("")
    assert "DOCKER_CERT_PATH" in str(caught.value)
    assert "DOCKER_TLS_VERIFY" in str(caught.value)
