/**
 * Classifying network addresses, for code that must refuse to connect to anything but the public
 * internet (outbound requests to user-supplied URLs).
 */
import ipaddr from 'ipaddr.js';

// Ranges that IANA's special-purpose registries mark globally reachable; every other special range
// (private, loopback, link-local, reserved, documentation, benchmarking, ...) is not.
const PUBLIC_IPV4_RANGES = new Set(['unicast', 'as112', 'amt']);
const PUBLIC_IPV6_RANGES = new Set(['unicast', 'as112v6', 'amt']);

const NAT64_WELL_KNOWN = ipaddr.IPv6.parse('64:ff9b::');
// Only 2000::/3 is allocated for global unicast; ipaddr.js calls anything it has no name for
// "unicast", including IPv4-compatible (::a.b.c.d) and unallocated space.
const GLOBAL_UNICAST = ipaddr.IPv6.parse('2000::');
// `::a.b.c.d` is the deprecated IPv4-compatible form, which ipaddr.js reads as if it were
// IPv4-mapped (`::ffff:a.b.c.d`); it is never routable, so it is refused before parsing.
const IPV4_COMPATIBLE_DOTTED = /^::[\d.]+(%.*)?$/;

function ipv4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

function isPublicIPv4(address: ipaddr.IPv4): boolean {
  return PUBLIC_IPV4_RANGES.has(address.range());
}

function isPublicIPv6(address: ipaddr.IPv6): boolean {
  const range = address.range();
  const parts = address.parts;
  // Addresses that embed an IPv4 address reach it (through the host stack, a NAT64 gateway or a
  // 6to4 relay), so they are exactly as public as the address they carry.
  if (range === 'ipv4Mapped') return isPublicIPv4(address.toIPv4Address());
  if (range === 'rfc6052') {
    // Only the well-known NAT64 prefix is global; 64:ff9b:1::/48 is for local use.
    return address.match(NAT64_WELL_KNOWN, 96) && isPublicIPv4(ipv4FromParts(parts[6]!, parts[7]!));
  }
  if (range === '6to4') return isPublicIPv4(ipv4FromParts(parts[1]!, parts[2]!));
  return PUBLIC_IPV6_RANGES.has(range) && address.match(GLOBAL_UNICAST, 3);
}

/**
 * True only for globally routable unicast addresses. False for loopback, private (10/8, 172.16/12,
 * 192.168/16), CGNAT 100.64/10, link-local (169.254/16 incl. the 169.254.169.254 metadata address,
 * fe80::/10), multicast, broadcast, unspecified (0.0.0.0, ::), reserved, benchmarking,
 * documentation ranges, unique-local fc00::/7, IPv4-mapped (::ffff:a.b.c.d → judged as the IPv4),
 * IPv4-compatible, NAT64 64:ff9b::/96 with an embedded private IPv4, 6to4 2002::/16 embedding a
 * private IPv4, Teredo. Unparseable → false.
 *
 * IPv4 is accepted only in the dotted-quad form (no `127.1`, `0x7f.0.0.1` or leading zeros): such
 * spellings are how filters get bypassed, and no resolver returns them.
 */
export function isPublicAddress(address: string): boolean {
  if (typeof address !== 'string') return false;
  try {
    if (ipaddr.IPv4.isValidFourPartDecimal(address)) return isPublicIPv4(ipaddr.IPv4.parse(address));
    if (IPV4_COMPATIBLE_DOTTED.test(address)) return false;
    if (ipaddr.IPv6.isValid(address)) return isPublicIPv6(ipaddr.IPv6.parse(address));
  } catch {
    // ipaddr.js validates before parsing, so this is only a belt against its edge cases.
  }
  return false;
}
