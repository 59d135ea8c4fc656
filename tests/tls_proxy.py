"""A TLS-terminating TCP proxy and the certificates for it, for tests of clients' TLS settings.

The Kafka broker the tests run (noida-db) speaks only plaintext. A client configured for TLS
can still complete a real handshake, with server verification and client certificates,
against this proxy, which passes the decrypted bytes on to the broker. The broker's
metadata still names its own plaintext address, so only what a client does over its
bootstrap connection (such as listing topics) works through the proxy.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
from pathlib import Path


class Certificates:
    """A CA, a server certificate for 127.0.0.1 and a client certificate it signed, plus an
    unrelated CA; PEM files made with the openssl command."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sparkwire-certs-"))
        self._ca("ca")
        self._ca("other_ca")
        self._signed("server", "127.0.0.1", "subjectAltName=IP:127.0.0.1")
        self._signed("client", "sparkwire", "extendedKeyUsage=clientAuth")

    def path(self, name: str) -> str:
        return str(self.folder / name)

    def pem(self, name: str) -> str:
        return (self.folder / name).read_text()

    def _openssl(self, *args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=self.folder)

    def _ca(self, name: str) -> None:
        self._openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
                      "-keyout", f"{name}.key", "-out", f"{name}.crt")

    def _signed(self, name: str, common_name: str, extension: str) -> None:
        self._openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={common_name}",
                      "-keyout", f"{name}.key", "-out", f"{name}.csr")
        (self.folder / f"{name}.ext").write_text(extension + "\n")
        self._openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                      "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt")

    def cleanup(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class TlsProxy:
    """Accepts TLS on 127.0.0.1 (a free port) and forwards each connection to `target`.

    `clients` lists the common name of each client certificate presented in a completed
    handshake (None without one); `failures` the handshakes that failed."""

    def __init__(self, target: tuple[str, int], certs: Certificates, require_client_cert: bool) -> None:
        self.target = target
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(certs.path("server.crt"), certs.path("server.key"))
        if require_client_cert:
            self.context.verify_mode = ssl.CERT_REQUIRED
            self.context.load_verify_locations(certs.path("ca.crt"))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.clients: list[str | None] = []
        self.failures: list[str] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            client = self.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            self.failures.append(str(exc))
            raw.close()
            return
        peer = client.getpeercert()
        subject = dict(pair[0] for pair in peer["subject"]) if peer else {}
        self.clients.append(subject.get("commonName"))
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
        _pump(client, upstream)

    def close(self) -> None:
        self._closed = True
        self.listener.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
