import ipaddr from 'ipaddr.js'

/**
 * Which network addresses outgoing requests of tenants (rule webhooks) may reach. Only public
 * unicast addresses are: loopback, private, link-local (169.254.169.254, cloud metadata),
 * unspecified (0.0.0.0, ::), carrier-grade NAT, multicast, reserved ranges and IPv6 forms that
 * embed an IPv4 address (mapped, NAT64, 6to4, Teredo) are not. The classification is
 * ipaddr.js's, which knows these ranges; an IPv4-mapped IPv6 address is judged as its IPv4.
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address
  if (!ipaddr.isValid(bare)) return false
  return ipaddr.process(bare).range() === 'unicast'
}

/** Whether `host` (a URL's hostname, IPv6 in brackets) is an IP address literal. */
export function isAddressLiteral(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  return ipaddr.IPv4.isValidFourPartDecimal(bare) || ipaddr.IPv6.isValid(bare)
}

/**
 * Why the URL's host text alone shows a private target (an address literal that is not public,
 * or a `localhost` name), or undefined when only resolving it can tell. URL parsing already
 * turned numeric IPv4 forms (`2130706433`, `0x7f.1`, `127.1`) into dotted ones.
 */
export function privateHostReason(url: URL): string | undefined {
  const host = url.hostname.toLowerCase().replace(/\.$/, '')
  if (host === 'localhost' || host.endsWith('.localhost')) return `"${url.hostname}" is a loopback name`
  if (isAddressLiteral(host) && !isPublicAddress(host)) return `${url.hostname} is not a public address`
  return undefined
}

/** Whether a listening address (HOST-style: an address literal or `localhost`) is loopback only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  if (bare.toLowerCase() === 'localhost') return true
  if (!ipaddr.isValid(bare)) return false
  return ipaddr.process(bare).range() === 'loopback'
}
