"""Connection pools for the URLs styleeval requests (a server's API, the corpora's source files), from urllib3.

- :func:`pool_manager`: a ``urllib3.PoolManager`` for a URL, or a ``ProxyManager`` where the environment names a
  proxy for it (``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY``, either case, lower case first, as curl and the
  standard library read them; ``NO_PROXY`` exempts hosts and their subdomains, ``*`` every host). An ``https://``
  proxy is spoken to over TLS (a ``CONNECT`` tunnel inside it for an https URL), an ``http://`` proxy in clear;
  credentials in the proxy URL are sent as ``Proxy-Authorization: Basic``, never put in the pool's URL.
- :func:`split_credentials` / :func:`redacted`: credentials in a URL taken out of it (to be sent as a header) and a
  form of it to print, whose password is ``***``.

TLS is verified against the system's certificates (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` point OpenSSL elsewhere).
"""

from __future__ import annotations

import base64
import os
import urllib.parse
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


def redacted(url: str) -> str:
    """``url`` as it may be printed: a password in it is replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    userinfo, _, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def pool_manager(url: str, **pool_kw: Any) -> urllib3.PoolManager:
    """A pool manager for requests to ``url``: a ``ProxyManager`` when :func:`proxy_for` names a proxy, else a
    ``PoolManager``; ``pool_kw`` are urllib3's (``maxsize``, ``headers``, ``timeout``, ``retries``...)."""
    proxy = proxy_for(url)
    if proxy is None:
        return urllib3.PoolManager(**pool_kw)
    proxy_url, auth = split_credentials(proxy)
    return urllib3.ProxyManager(proxy_url, proxy_headers={"Proxy-Authorization": auth} if auth else None, **pool_kw)
