"""Connection pools for the URLs styleeval requests (a server's API, the corpora's source files), from urllib3.

- :func:`pool_manager`: a ``urllib3.PoolManager`` for a URL, or a ``ProxyManager`` where the environment names a
  proxy for it (``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY``, either case, lower case first, as curl and the
  standard library read them; ``NO_PROXY`` exempts hosts and their subdomains, ``*`` every host). An ``https://``
  proxy is spoken to over TLS (a ``CONNECT`` tunnel inside it for an https URL), an ``http://`` proxy in clear;
  credentials in the proxy URL are sent as ``Proxy-Authorization: Basic``, never put in the pool's URL.
- :func:`split_credentials` / :func:`redacted`: credentials in a URL taken out of it (to be sent as a header) and a
  form of it to print, whose user-info is ``***`` whatever its form (``token@``, ``user:password@``: a user name alone
  is often the token); :func:`redacted_text`: the same for every URL in a text (a metric spec);
  :class:`Secrets`: what a server was sent to authenticate (an API key, a URL's credentials) blanked out of any text
  it may echo, with any ``Bearer <token>`` and ``Basic <user:password in base64>`` in it.

TLS is verified against the system's certificates (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` point OpenSSL elsewhere).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

import urllib3


def _env(name: str) -> str:
    return (os.environ.get(name.lower()) or os.environ.get(name.upper()) or "").strip()


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``<scheme>_proxy``, else ``all_proxy``) unless ``no_proxy``
    exempts its host; ``None`` when there is none. A proxy given without a scheme is an ``http://`` one."""
    parts = urllib.parse.urlsplit(url)
    proxy = _env(f"{parts.scheme}_proxy") or _env("all_proxy")
    if not proxy or _bypassed(parts):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _bypassed(parts: urllib.parse.SplitResult) -> bool:
    host = (parts.hostname or "").lower()
    port = parts.port
    for entry in _env("no_proxy").lower().split(","):
        entry = entry.strip()
        if entry == "*":
            return True
        name, _, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        name = name.strip("[]").lstrip(".")
        if not name or (entry_port and entry_port != str(port)):
            continue
        if host == name or host.endswith("." + name):
            return True
    return False


def split_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` and the ``Basic`` credentials it held (``None``: none)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    pair = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
    bare = parts._replace(netloc=parts.netloc.rpartition("@")[2])
    return urllib.parse.urlunsplit(bare), "Basic " + base64.b64encode(pair.encode()).decode()


_URL_USERINFO = re.compile(r"^(\s*(?:[A-Za-z][A-Za-z0-9+.-]*:/+|/+)?)[^/?#]*@")
"""A URL's user-info: from after its scheme and slashes (or from its start: ``token@host``, ``user:password@host``)
to the last ``@`` before the path, as ``urllib.parse.urlsplit`` reads it, and in a URL it cannot parse."""
_TEXT_USERINFO = re.compile(r"(?<=://)[^/?#\s]*@")
"""The user-info of a URL anywhere in a text."""


def redacted(url: str) -> str:
    """``url`` as it may be printed: its user-info, whatever its form, replaced by ``***`` (also where the URL has no
    scheme or does not parse). Tabs and line breaks are dropped first, as ``urlsplit`` drops them."""
    url = url.replace("\t", "").replace("\r", "").replace("\n", "")
    return _URL_USERINFO.sub(r"\1***@", url, count=1)


def redacted_text(text: str) -> str:
    """``text`` with the user-info of every ``scheme://user-info@`` URL in it replaced by ``***``."""
    return _TEXT_USERINFO.sub("***@", text)


_BEARER = re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9\-._~+/]+=*")
"""An OAuth 2.0 bearer token as an ``Authorization`` header writes it (RFC 6750's b64token)."""
_BASIC = re.compile(r"\b(Basic)(\s+)([A-Za-z0-9+/]+=*)")
"""Basic credentials (RFC 7617): ``user:password`` in base64."""
SHORTEST_SECRET = 4
"""A secret shorter than this is not looked for in a text: it would blank out ordinary words (``EMPTY``, the key local
servers take, is no secret either)."""


class Secrets:
    """The credentials a server is sent, and :meth:`redact`: a text with each of them, and any bearer token or Basic
    credentials, replaced by ``***`` (an error message, a log line, a report: whatever echoes a server's words).

    >>> Secrets(["sk-SECRETKEY-123"]).redact("bad key: Bearer sk-SECRETKEY-123 (key sk-SECRETKEY-123)")
    'bad key: Bearer *** (key ***)'
    >>> Secrets([]).redact("Basic YW5uOnMzY3IzdA== and Basic authentication")
    'Basic *** and Basic authentication'
    """

    def __init__(self, secrets: Iterable[str | None]) -> None:
        found = {s for s in secrets if s and len(s) >= SHORTEST_SECRET and s != "EMPTY"}
        self.secrets = sorted(found, key=len, reverse=True)  # the longest first: one that holds another is blanked whole

    @classmethod
    def of(cls, api_key: str | None, basic: str | None) -> Secrets:
        """The secrets of a server's ``api_key`` and of ``basic`` (the ``Basic ...`` credentials of its URL: the
        base64 string, and the user name and password it holds, each alone and as a pair)."""
        found = [api_key]
        if basic:
            encoded = basic.removeprefix("Basic ")
            pair = base64.b64decode(encoded).decode("utf-8", "replace")
            found += [encoded, pair, *pair.split(":", 1)]
        return cls(found)

    def redact(self, text: str) -> str:
        """``text`` with every secret, bearer token and Basic credentials replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        text = _BEARER.sub(r"\1\2***", text)
        return _BASIC.sub(lambda m: f"{m[1]}{m[2]}***" if _is_basic_pair(m[3]) else m[0], text)


def _is_basic_pair(encoded: str) -> bool:
    """Whether ``encoded`` is base64 of ``user:password`` (Basic credentials), not a word after "Basic"."""
    try:
        return b":" in base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return False


def pool_manager(url: str, **pool_kw: Any) -> urllib3.PoolManager:
    """A pool manager for requests to ``url``: a ``ProxyManager`` when :func:`proxy_for` names a proxy, else a
    ``PoolManager``; ``pool_kw`` are urllib3's (``maxsize``, ``headers``, ``timeout``, ``retries``...)."""
    proxy = proxy_for(url)
    if proxy is None:
        return urllib3.PoolManager(**pool_kw)
    proxy_url, auth = split_credentials(proxy)
    return urllib3.ProxyManager(proxy_url, proxy_headers={"Proxy-Authorization": auth} if auth else None, **pool_kw)
