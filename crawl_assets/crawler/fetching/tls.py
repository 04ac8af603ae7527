"""TLS for the fetch client: what the crawl trusts, and why a handshake failed.

The trust store: certifi's bundle (the same CAs on every machine, whatever the system has),
plus the CA certificates of settings.ca_bundle, or those alone with ca_bundle_mode = "replace"
(a crawl inside a company network, or behind an inspecting proxy, trusts its own CA). Without
the setting, a file named by SSL_CERT_FILE is the whole store, as for OpenSSL and curl. The
context is built before a batch's first request: loading a bundle is half a second of CPU on
a busy machine, which the event loop must not spend while answers wait.

A handshake that fails is named for what went wrong (the status classes of
vocabulary.TLS_FAILURES), so a day report can count certificate problems apart from hosts
that refuse connections.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from pathlib import Path

import certifi

from ..crawl_errors import CrawlInputError
from ..vocabulary import StatusClass

TRUST_MODES = ("add", "replace")  # settings.ca_bundle_mode
CERT_FILE_ENV = "SSL_CERT_FILE"

# OpenSSL's X509_V_ERR_* codes (x509_vfy.h) that name a failure of their own.
_EXPIRED_CODES = frozenset({9, 10})  # not yet valid, expired: outside the validity period
_NAME_CODES = frozenset({62, 64})  # hostname mismatch, IP address mismatch


class TrustStoreError(CrawlInputError):
    """The CA bundle named by the settings or SSL_CERT_FILE cannot be read."""


def client_context(ca_bundle: Path | None = None, mode: str = "add",
                   environ: Mapping[str, str] | None = None) -> ssl.SSLContext:
    """The client context of a batch: certificates checked against the trust store (see the
    module's comment), host names checked, HTTP/1.1 offered by ALPN."""
    environ = os.environ if environ is None else environ
    if ca_bundle is not None:
        context = _context_from(Path(ca_bundle), "the setting ca_bundle", certifi.where() if mode == "add" else None)
    elif environ.get(CERT_FILE_ENV):
        context = _context_from(Path(environ[CERT_FILE_ENV]), f"the environment variable {CERT_FILE_ENV}", None)
    else:
        context = ssl.create_default_context(cafile=certifi.where())
    context.set_alpn_protocols(["http/1.1"])  # the only protocol the client speaks (README: HTTP/2)
    return context


def _context_from(bundle: Path, named_by: str, base: str | None) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=base or str(bundle))
        if base is not None:
            context.load_verify_locations(cafile=str(bundle))
    except (OSError, ssl.SSLError) as exc:
        raise TrustStoreError(
            f"the CA bundle {bundle} ({named_by}) cannot be used: {exc.strerror or exc}; name a PEM "
            "file of CA certificates there (recrawl.toml, ca_bundle), or remove it") from None
    return context


def tls_failure(exc: BaseException, host: str) -> tuple[StatusClass, str]:
    """(status class, message) of a handshake that failed with `exc`."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        code = exc.verify_code
        if code in _EXPIRED_CODES:
            kind = StatusClass.TLS_CERTIFICATE_EXPIRED
        elif code in _NAME_CODES:
            kind = StatusClass.TLS_NAME_MISMATCH
        else:  # no path to a trusted CA, self-signed, revoked, bad signature, ...
            kind = StatusClass.TLS_UNTRUSTED
        return kind, f"TLS: the certificate of {host} was refused: {exc.verify_message}"
    return StatusClass.TLS_PROTOCOL_ERROR, f"TLS: the handshake with {host} failed: {exc or type(exc).__name__}"
