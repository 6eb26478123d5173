"""Where a webhook may be sent.

A webhook URL comes from the client, so without care it is a way to make the worker call things that
only the worker can reach: the instance metadata service, the VPC, the function's own loopback. The
policy, applied at submission (422) and again before every delivery:

- `https` only; `http` only where the deployment sets ALLOW_HTTP_WEBHOOKS (the local runtime).
- No user info (`user@host`), no backslashes, whitespace or control characters, no zone ids.
- A host that looks numeric but is not a canonical dotted quad (`2130706433`, `0x7f.1`, `0177.0.0.1`,
  `127.1`) is refused outright: resolvers read those as addresses, so they only exist to dodge checks.
- The host is resolved and every address it resolves to must be public: loopback, private, link-local
  (169.254.169.254, fd00:ec2::254), CGNAT, multicast, reserved, documentation, benchmarking and
  unspecified ranges are refused, and an IPv6 address that embeds an IPv4 one (mapped, compatible,
  NAT64, 6to4, Teredo) is judged by the IPv4 address inside it.
- The caller then connects to the address that was checked (`Target.address`), never to the name
  again, so a second DNS answer (rebinding) cannot redirect the request.

WEBHOOK_ALLOW_LOOPBACK (local runtime and tests only) additionally admits 127.0.0.0/8 and ::1.
"""

import ipaddress
import re
import socket
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2048

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_FORBIDDEN_CHARS = re.compile(r"[\x00-\x20\x7f\\]")
_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
# The last label of a real host name is never numeric; resolvers would read it as (part of) an address.
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")

# Ranges that `ipaddress` does not already flag as non-global in every Python version we run on.
_ALWAYS_REFUSED = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "100.64.0.0/10",  # CGNAT
        "192.0.0.0/24",
        "192.0.2.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "fc00::/7",  # unique local, which holds fd00:ec2::254
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_LOOPBACK_V4 = ipaddress.ip_network("127.0.0.0/8")
_LOOPBACK_V6 = ipaddress.ip_address("::1")


class RefusedTargetError(ValueError):
    """The URL may never be delivered to; the message says why."""


class UnresolvedTargetError(Exception):
    """The host name did not resolve. `permanent` when the name does not exist at all."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True)
class TargetPolicy:
    allow_http: bool = False
    allow_loopback: bool = False


@dataclass(frozen=True)
class Target:
    """A parsed webhook URL. `address` is set once the host has been resolved and checked."""

    url: str
    scheme: str
    host: str  # lower-case ASCII host name, or an IP address without brackets
    port: int
    path: str  # path and query, as sent on the request line
    address: str | None = None

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default_port = 443 if self.scheme == "https" else 80
        return host if self.port == default_port else f"{host}:{self.port}"

    @property
    def is_ip_literal(self) -> bool:
        return _as_ip(self.host) is not None


def parse(url: str, policy: TargetPolicy) -> Target:
    """Check everything about `url` that needs no network; raise RefusedTargetError when it fails."""
    if len(url) > MAX_URL_LENGTH:
        raise RefusedTargetError(f"URL longer than {MAX_URL_LENGTH} characters")
    if _FORBIDDEN_CHARS.search(url):
        raise RefusedTargetError("URL contains whitespace, control characters or backslashes")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RefusedTargetError(f"malformed URL: {exc}") from None
    scheme = parts.scheme.lower()
    allowed_schemes = ("https", "http") if policy.allow_http else ("https",)
    if scheme not in allowed_schemes:
        raise RefusedTargetError(
            f"scheme {scheme or '(none)'!r} not allowed; use {' or '.join(allowed_schemes)}"
        )
    if "@" in parts.netloc:
        raise RefusedTargetError("URL must not carry user info")
    host = _normalise_host(parts.hostname or "")
    if port == 0:
        raise RefusedTargetError("port 0 is not a valid port")
    target = Target(
        url=url,
        scheme=scheme,
        host=host,
        port=port or (443 if scheme == "https" else 80),
        path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
    )
    literal = _as_ip(host)
    if literal is not None:
        check_address(literal, policy)
    return target


def resolve(target: Target, policy: TargetPolicy) -> Target:
    """Resolve the host, refuse it if any address is not public, and pin the first address."""
    literal = _as_ip(target.host)
    if literal is not None:
        check_address(literal, policy)
        return replace(target, address=str(literal))
    addresses = lookup(target.host, target.port)
    if not addresses:
        raise UnresolvedTargetError(f"{target.host} has no addresses", permanent=False)
    for address in addresses:
        check_address(ipaddress.ip_address(address), policy, shown_as=f"{target.host} resolves to {address}")
    return replace(target, address=addresses[0])


def lookup(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, in resolver order (the seam tests replace)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        permanent = exc.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME))
        raise UnresolvedTargetError(f"cannot resolve {host}: {exc.strerror}", permanent=permanent) from None
    seen: dict[str, None] = {}
    for _family, _type, _proto, _canon, sockaddr in infos:
        seen.setdefault(str(sockaddr[0]).split("%", 1)[0], None)
    return list(seen)


def check_address(ip: IPAddress, policy: TargetPolicy, *, shown_as: str | None = None) -> None:
    """Raise RefusedTargetError unless `ip` is a public unicast address (or allowed loopback)."""
    reason = _refusal(ip, policy)
    if reason is not None:
        raise RefusedTargetError(f"{shown_as or ip}: {reason}")


def _refusal(ip: IPAddress, policy: TargetPolicy) -> str | None:
    if policy.allow_loopback and (ip == _LOOPBACK_V6 or (ip.version == 4 and ip in _LOOPBACK_V4)):
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner = _refusal(embedded, TargetPolicy())
            return None if inner is None else f"embeds {embedded}, which is {inner}"
    if ip.is_unspecified:
        return "unspecified address"
    if ip.version == 4 and ip in _CGNAT:
        return "carrier-grade NAT address"
    if ip.is_loopback:
        return "loopback address"
    if ip.is_link_local:
        return "link-local address (cloud metadata lives here)"
    if ip.is_multicast:
        return "multicast address"
    if ip.is_private:
        return "private address"
    if ip.is_reserved:
        return "reserved address"
    if any(ip in network for network in _ALWAYS_REFUSED if network.version == ip.version):
        return "non-public address"
    if not ip.is_global:
        return "non-public address"
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]  # the client address is the one a packet ends up at
    if ip in _NAT64 or (int(ip) >> 32 == 0 and int(ip) > 1):  # NAT64 well-known prefix, IPv4-compatible
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _normalise_host(raw: str) -> str:
    host = raw.rstrip(".")
    if not host:
        raise RefusedTargetError("URL has no host")
    if "%" in host:
        raise RefusedTargetError("IPv6 zone identifiers are not allowed")
    if _as_ip(host) is not None:
        return str(_as_ip(host))
    try:
        ascii_host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise RefusedTargetError(f"invalid host name {raw!r}") from None
    labels = ascii_host.split(".")
    if len(ascii_host) > 253 or not all(_HOST_LABEL.match(label) for label in labels):
        raise RefusedTargetError(f"invalid host name {raw!r}")
    if _NUMERIC_LABEL.match(labels[-1]):
        raise RefusedTargetError(f"{raw!r} is a non-canonical IP address")
    return ascii_host


def _as_ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
