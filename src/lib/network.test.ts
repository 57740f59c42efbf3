import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPublicAddress } from './network.ts';

const PUBLIC = [
  ['8.8.8.8', 'Google DNS'],
  ['1.1.1.1', 'Cloudflare DNS'],
  ['93.184.216.34', 'an ordinary IPv4 host'],
  ['172.15.255.255', 'just below 172.16/12'],
  ['172.32.0.1', 'just above 172.16/12'],
  ['100.63.255.255', 'just below CGNAT'],
  ['100.128.0.1', 'just above CGNAT'],
  ['169.253.255.255', 'just below link-local'],
  ['192.175.48.1', 'AS112 anycast (globally reachable per IANA)'],
  ['2606:4700:4700::1111', 'Cloudflare DNS over IPv6'],
  ['2001:4860:4860::8888', 'Google DNS over IPv6'],
  ['2a00:1450:4001:82b::200e', 'an ordinary IPv6 host'],
  ['::ffff:8.8.8.8', 'IPv4-mapped public address'],
  ['64:ff9b::808:808', 'NAT64 of a public address'],
  ['64:ff9b::8.8.8.8', 'NAT64 of a public address, dotted'],
  ['2002:808:808::1', '6to4 of a public address'],
] as const;

const NOT_PUBLIC = [
  // IPv4
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback, end of 127/8'],
  ['10.0.0.1', 'private 10/8'],
  ['10.255.255.255', 'private 10/8, end'],
  ['172.16.0.1', 'private 172.16/12'],
  ['172.31.255.255', 'private 172.16/12, end'],
  ['192.168.1.1', 'private 192.168/16'],
  ['100.64.0.1', 'carrier-grade NAT 100.64/10'],
  ['100.127.255.255', 'carrier-grade NAT, end'],
  ['169.254.0.1', 'link-local'],
  ['169.254.169.254', 'the cloud metadata address'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast (SSDP)'],
  ['255.255.255.255', 'broadcast'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', '"this network" 0/8'],
  ['240.0.0.1', 'reserved 240/4'],
  ['192.0.0.1', 'IETF protocol assignments 192.0.0/24'],
  ['192.0.2.1', 'documentation TEST-NET-1'],
  ['198.51.100.1', 'documentation TEST-NET-2'],
  ['203.0.113.1', 'documentation TEST-NET-3'],
  ['198.18.0.1', 'benchmarking 198.18/15'],
  ['198.19.255.255', 'benchmarking, end'],
  ['192.88.99.1', 'deprecated 6to4 relay anycast'],
  // IPv6
  ['::1', 'IPv6 loopback'],
  ['::', 'IPv6 unspecified'],
  ['fe80::1', 'IPv6 link-local'],
  ['fe80::1%eth0', 'IPv6 link-local with a zone'],
  ['febf::1', 'IPv6 link-local, end of fe80::/10'],
  ['fc00::1', 'unique-local fc00::/7'],
  ['fd12:3456:789a::1', 'unique-local fd00::/8'],
  ['ff02::1', 'IPv6 multicast'],
  ['fec0::1', 'deprecated site-local'],
  ['2001:db8::1', 'IPv6 documentation'],
  ['3fff::1', 'IPv6 documentation 3fff::/20'],
  ['2001:2::1', 'IPv6 benchmarking'],
  ['2001::1', 'Teredo'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo, a real-looking one'],
  ['100::1', 'discard-only 100::/64'],
  ['4000::1', 'unallocated, outside 2000::/3'],
  // IPv4 inside IPv6
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:169.254.169.254', 'IPv4-mapped metadata address'],
  ['::127.0.0.1', 'IPv4-compatible loopback'],
  ['::8.8.8.8', 'IPv4-compatible (deprecated), even of a public address'],
  ['::808:808', 'IPv4-compatible, hex form'],
  ['0:0:0:0:0:0:8.8.8.8', 'IPv4-compatible, written in full'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated'],
  ['64:ff9b::127.0.0.1', 'NAT64 of loopback'],
  ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata address'],
  ['64:ff9b:1::808:808', 'local-use NAT64 64:ff9b:1::/48'],
  ['2002:a00:1::1', '6to4 of 10.0.0.1'],
  ['2002:7f00:1::1', '6to4 of 127.0.0.1'],
  ['2002:a9fe:a9fe::1', '6to4 of the metadata address'],
] as const;

const UNPARSEABLE = [
  '',
  'localhost',
  'example.com',
  '[::1]',
  ' 8.8.8.8',
  '8.8.8.8 ',
  '8.8.8.8/32',
  '8.8.8.8:443',
  '256.1.1.1',
  '1.2.3',
  '127.1',
  '2130706433',
  '0x7f.0.0.1',
  '010.0.0.1',
  ':::1',
  '2606:4700:4700::1111::1',
  'gggg::1',
];

describe('isPublicAddress', () => {
  it('accepts globally routable unicast addresses', () => {
    for (const [address, what] of PUBLIC) assert.equal(isPublicAddress(address), true, `${address}: ${what}`);
  });

  it('refuses loopback, private, link-local, metadata, multicast, reserved and documentation ranges', () => {
    for (const [address, what] of NOT_PUBLIC) assert.equal(isPublicAddress(address), false, `${address}: ${what}`);
  });

  it('judges an IPv4 address carried in IPv6 (mapped, NAT64, 6to4) as that IPv4 address', () => {
    assert.equal(isPublicAddress('::ffff:1.1.1.1'), true);
    assert.equal(isPublicAddress('::ffff:192.168.0.1'), false);
    assert.equal(isPublicAddress('64:ff9b::1.1.1.1'), true);
    assert.equal(isPublicAddress('64:ff9b::192.168.0.1'), false);
  });

  it('refuses anything that is not a canonical address, including the spellings filters miss', () => {
    for (const text of UNPARSEABLE) assert.equal(isPublicAddress(text), false, JSON.stringify(text));
    for (const value of [undefined, null, 42, {}, []]) assert.equal(isPublicAddress(value as never), false);
  });
});
