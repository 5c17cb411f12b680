"""A self-signed TLS certificate and key, for trying the gRPC server's TLS without a CA.

The certificate is its own CA, so clients use the same file as their root of trust."""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERT_NAME = "server.crt"
KEY_NAME = "server.key"
DEFAULT_HOSTS = ("localhost", "127.0.0.1")
_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
_COMMON_NAME_MAX = 64  # X.509's upper bound on a CN; SANs have no such limit


class CertError(Exception):
    """The certificate could not be made; the message is for the user."""


@dataclass(frozen=True)
class CertPair:
    cert: Path  # PEM certificate: the server's chain and the clients' root of trust
    key: Path  # PEM PKCS8 private key, unencrypted, mode 0600


MAX_DAYS = 36_500  # a century: more is a mistake, and far more overflows the date


def generate_self_signed(out_dir: Path, hosts: Sequence[str] = DEFAULT_HOSTS, days: int = 365,
                         overwrite: bool = False) -> CertPair:
    """Write out_dir/server.crt and out_dir/server.key for hosts (DNS names or IPs)."""
    if isinstance(hosts, str):  # a bare string is a sequence of one-letter "hosts"
        hosts = (hosts,)
    names = _check_hosts(hosts)
    if days < 1:
        raise CertError(f"the certificate must be valid for at least one day, not {days}")
    if days > MAX_DAYS:
        raise CertError(f"the certificate may be valid for at most {MAX_DAYS:,} days (a "
                        f"century), not {days:,}")
    pair = CertPair(cert=out_dir / CERT_NAME, key=out_dir / KEY_NAME)
    if not overwrite:
        for path in (pair.cert, pair.key):  # check both before writing either
            if os.path.lexists(path):
                raise CertError(f"{path} already exists; remove it or pass overwrite=True")
    try:
        out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise CertError(f"cannot create the directory {out_dir}: {exc.strerror}") from exc

    key = ec.generate_private_key(ec.SECP256R1())  # P-256: fast, and every TLS stack has it
    cert = _self_signed(key, names, days)
    _write(pair.key, key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()), 0o600, overwrite)
    try:
        _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644, overwrite)
    except CertError:
        pair.key.unlink(missing_ok=True)  # a key without its certificate is of no use
        raise
    return pair


def _check_hosts(hosts: Sequence[str]) -> list[x509.GeneralName]:
    if not hosts:
        raise CertError("give at least one host name or IP address for the certificate")
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
            continue
        except ValueError:
            pass
        if not _is_dns_name(host):
            raise CertError(f"{host!r} is neither an IP address nor a DNS name "
                            "(dot-separated labels of letters, digits and hyphens)")
        names.append(x509.DNSName(host))
    if len(hosts[0]) > _COMMON_NAME_MAX:
        raise CertError(f"the first host {hosts[0]!r} is longer than the {_COMMON_NAME_MAX} "
                        "characters a certificate's common name allows; list a shorter one first")
    return names


def _is_dns_name(host: str) -> bool:
    if not host.isascii() or len(host) > 253:
        return False
    labels = host.split(".")
    if labels[0] == "*" and len(labels) > 1:  # a wildcard, as the leftmost label only
        labels = labels[1:]
    # An all-digit last label is a mistyped IPv4 address such as 127.0.0.300, not a name.
    return all(_LABEL.fullmatch(label) for label in labels) and not labels[-1].isdigit()


def _self_signed(key: ec.EllipticCurvePrivateKey, names: list[x509.GeneralName],
                 days: int) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, str(names[0].value))])
    now = datetime.datetime.now(datetime.UTC)
    public = key.public_key()
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))  # tolerate a little clock skew
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        # CA so that the clients can trust this very certificate as their root; path length 0
        # because it is never meant to sign other CAs.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False),
                       critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public),
                       critical=False)
        .sign(key, hashes.SHA256())
    )


def _write(path: Path, data: bytes, mode: int, overwrite: bool) -> None:
    """Write path with its final mode from creation on, so the key is never readable by others
    even for a moment; O_EXCL without overwrite, so a file made since the check survives."""
    # Truncating an old file would keep its (maybe looser) mode: replace it instead.
    target = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp") if overwrite else path
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError as exc:
        raise CertError(f"{path} already exists; remove it or pass overwrite=True") from exc
    except OSError as exc:
        raise CertError(f"cannot create {path}: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if overwrite:
            os.replace(target, path)
    except OSError as exc:
        target.unlink(missing_ok=True)
        raise CertError(f"cannot write {path}: {exc.strerror}") from exc
