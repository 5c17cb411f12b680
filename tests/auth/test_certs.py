"""Self-signed certificates: the files, their contents, and a real TLS handshake with gRPC."""

from __future__ import annotations

import ipaddress
import re
import stat
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from trainyard.auth.certs import CertError, CertPair, generate_self_signed


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_writes_a_private_key_and_a_certificate_for_every_host(tmp_path: Path) -> None:
    pair = generate_self_signed(tmp_path / "tls", ["trainyard.internal", "127.0.0.1", "::1"])
    assert pair == CertPair(tmp_path / "tls" / "server.crt", tmp_path / "tls" / "server.key")
    assert mode(pair.key) == 0o600 and mode(tmp_path / "tls") == 0o700
    key = load_pem_private_key(pair.key.read_bytes(), password=None)  # unencrypted
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"

    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    assert cert.public_key() == key.public_key()
    cn = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    assert [a.value for a in cn] == ["trainyard.internal"] and cert.issuer == cert.subject
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["trainyard.internal"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1"),
                                                        ipaddress.ip_address("::1")]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    days = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 365 <= days.days <= 366


def test_existing_files_are_kept_unless_overwrite_is_asked_for(tmp_path: Path) -> None:
    first = generate_self_signed(tmp_path)
    before = first.cert.read_bytes(), first.key.read_bytes()
    with pytest.raises(CertError, match=r"server\.crt already exists"):
        generate_self_signed(tmp_path)
    first.cert.unlink()
    # The key alone is enough to refuse, and nothing is written.
    with pytest.raises(CertError, match=r"server\.key already exists"):
        generate_self_signed(tmp_path)
    assert not first.cert.exists() and first.key.read_bytes() == before[1]

    first.key.chmod(0o644)  # a loose old key must not pass its mode on to the new one
    again = generate_self_signed(tmp_path, overwrite=True)
    assert again.key.read_bytes() != before[1] and again.cert.read_bytes() != before[0]
    assert mode(again.key) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["server.crt", "server.key"]


@pytest.mark.parametrize("hosts", [[], ["bad host"], ["-leading.hyphen"], ["127.0.0.300"],
                                   ["a" * 64 + ".example"], ["ok.example", ""]])
def test_hosts_that_are_neither_names_nor_addresses_are_refused(tmp_path: Path,
                                                                hosts: list[str]) -> None:
    with pytest.raises(CertError):
        generate_self_signed(tmp_path, hosts)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(("days", "said"), [
    (0, "at least one day, not 0"), (36_501, "at most 36,500 days (a century), not 36,501"),
    (99_999_999_999, "at most 36,500 days"),
])
def test_a_validity_out_of_range_is_a_sentence(tmp_path: Path, days: int, said: str) -> None:
    with pytest.raises(CertError, match=re.escape(said)):
        generate_self_signed(tmp_path, days=days)
    assert not (tmp_path / "server.crt").exists()


def test_bad_host_error_is_a_sentence(tmp_path: Path) -> None:
    with pytest.raises(CertError, match="'bad host' is neither an IP address nor a DNS name"):
        generate_self_signed(tmp_path, ["localhost", "bad host"])
    with pytest.raises(CertError, match="at least one host"):
        generate_self_signed(tmp_path, [])


@pytest.fixture
def tls_health_server(tmp_path: Path) -> Iterator[tuple[int, bytes]]:
    """A real gRPC server on loopback that speaks TLS with a fresh certificate, serving health."""
    pair = generate_self_signed(tmp_path / "server")
    cert = pair.cert.read_bytes()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    credentials = grpc.ssl_server_credentials([(pair.key.read_bytes(), cert)])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    try:
        yield port, cert
    finally:
        server.stop(0).wait()


def check(port: int, root: bytes) -> health_pb2.HealthCheckResponse.ServingStatus.ValueType:
    channel_credentials = grpc.ssl_channel_credentials(root_certificates=root)
    with grpc.secure_channel(f"127.0.0.1:{port}", channel_credentials) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status


def test_a_client_trusting_the_certificate_reaches_the_server(
        tls_health_server: tuple[int, bytes]) -> None:
    port, cert = tls_health_server
    assert check(port, cert) == health_pb2.HealthCheckResponse.SERVING


def test_a_client_trusting_another_certificate_is_refused(
        tls_health_server: tuple[int, bytes], tmp_path: Path) -> None:
    port, _ = tls_health_server
    other = generate_self_signed(tmp_path / "other").cert.read_bytes()
    with pytest.raises(grpc.RpcError) as failed:
        check(port, other)
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "handshake failed" in (failed.value.details() or "").lower()  # refused for trust
