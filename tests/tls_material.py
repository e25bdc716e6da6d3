"""A certificate for the tests' scripted servers on 127.0.0.1, made once per test process.

The plugin sends no credential to a server that is not TLS (as kubectl), so a scripted server that must see
a token, a password or an exec plugin's credential speaks TLS with this certificate, and the kubeconfig that
points at it trusts it through certificate-authority-data."""

from __future__ import annotations

import base64
import datetime
import functools
import ipaddress
import os
import ssl
import tempfile


@functools.cache
def _pem() -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pvleft-test-server")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def ca_data() -> str:
    """certificate-authority-data that trusts the scripted servers."""
    return base64.b64encode(_pem()[0]).decode()


@functools.cache
def server_context() -> ssl.SSLContext:
    cert, key = _pem()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as folder:  # a test key, not a secret: load_cert_chain wants files
        paths = [os.path.join(folder, n) for n in ("cert.pem", "key.pem")]
        for path, data in zip(paths, (cert, key), strict=True):
            with open(path, "wb") as handle:
                handle.write(data)
        context.load_cert_chain(*paths)
    return context
