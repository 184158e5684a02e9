// Where production may send webhooks. A webhook URL is chosen by a customer, so without these
// rules the service could be made to call its own cloud metadata endpoint or anything else on its
// private network (server-side request forgery). The same checks run at registration and again
// on every connection, on the very addresses the connection then uses: a name that resolved to a
// public address at registration and to 10.0.0.5 an hour later (DNS rebinding) is refused.
import dns from 'node:dns';
import net from 'node:net';

export class UnsafeAddressError extends Error {}

interface Range {
  network: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
  reason: string;
}

// Most specific first: the first match names the reason.
const RANGES: Range[] = [
  { network: '169.254.169.254', prefix: 32, family: 'ipv4', reason: 'a cloud metadata address' },
  { network: 'fd00:ec2::254', prefix: 128, family: 'ipv6', reason: 'a cloud metadata address' },
  { network: '127.0.0.0', prefix: 8, family: 'ipv4', reason: 'a loopback address' },
  { network: '::1', prefix: 128, family: 'ipv6', reason: 'a loopback address' },
  { network: '10.0.0.0', prefix: 8, family: 'ipv4', reason: 'a private address' },
  { network: '172.16.0.0', prefix: 12, family: 'ipv4', reason: 'a private address' },
  { network: '192.168.0.0', prefix: 16, family: 'ipv4', reason: 'a private address' },
  { network: 'fc00::', prefix: 7, family: 'ipv6', reason: 'a private address' },
  { network: '169.254.0.0', prefix: 16, family: 'ipv4', reason: 'a link-local address' },
  { network: 'fe80::', prefix: 10, family: 'ipv6', reason: 'a link-local address' },
  { network: '100.64.0.0', prefix: 10, family: 'ipv4', reason: 'a carrier-grade NAT address' },
  { network: '0.0.0.0', prefix: 8, family: 'ipv4', reason: 'an unspecified address' },
  { network: '::', prefix: 128, family: 'ipv6', reason: 'an unspecified address' },
  // Deprecated IPv4-compatible (::a.b.c.d) and IPv4-translated (::ffff:0:a.b.c.d) forms: no public
  // host is reached through them, and a stack that still honours them would reach the IPv4 inside.
  { network: '::', prefix: 96, family: 'ipv6', reason: 'a reserved address' },
  { network: '::ffff:0:0:0', prefix: 96, family: 'ipv6', reason: 'a reserved address' },
  { network: '224.0.0.0', prefix: 4, family: 'ipv4', reason: 'a multicast address' },
  { network: 'ff00::', prefix: 8, family: 'ipv6', reason: 'a multicast address' },
  { network: '240.0.0.0', prefix: 4, family: 'ipv4', reason: 'a reserved address' },
  { network: '192.0.0.0', prefix: 24, family: 'ipv4', reason: 'a reserved address' },
  { network: '192.0.2.0', prefix: 24, family: 'ipv4', reason: 'a reserved address' },
  { network: '198.18.0.0', prefix: 15, family: 'ipv4', reason: 'a reserved address' },
  { network: '198.51.100.0', prefix: 24, family: 'ipv4', reason: 'a reserved address' },
  { network: '203.0.113.0', prefix: 24, family: 'ipv4', reason: 'a reserved address' },
  { network: '2001:db8::', prefix: 32, family: 'ipv6', reason: 'a reserved address' },
  { network: '100::', prefix: 64, family: 'ipv6', reason: 'a reserved address' },
];

const LISTS = RANGES.map((r) => {
  const list = new net.BlockList();
  list.addSubnet(r.network, r.prefix, r.family);
  return { list, reason: r.reason };
});

/** IPv4 addresses carried inside IPv6 ones (NAT64 64:ff9b::/96, 6to4 2002::/16). */
function embeddedIpv4(address: string): string | null {
  const groups = expandIpv6(address);
  if (!groups) return null;
  const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return quad(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return quad(groups[1]!, groups[2]!);
  return null;
}

function expandIpv6(address: string): number[] | null {
  if (net.isIPv6(address) === false) return null;
  let text = address.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -v4[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array(8 - h.length - t.length).fill('0');
  const groups = [...h, ...fill, ...t].map((g) => parseInt(g, 16));
  return groups.length === 8 ? groups : null;
}

/** Why production must not connect to this IP address, or null when it may. */
export function unsafeAddressReason(address: string): string | null {
  const family = net.isIP(address);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const { list, reason } of LISTS) if (list.check(address, type)) return reason;
  if (family === 6) {
    const inner = embeddedIpv4(address);
    if (inner) {
      const reason = unsafeAddressReason(inner);
      if (reason) return reason;
    }
  }
  return null;
}

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Problems that make a string unusable as a webhook URL in any environment (422 validation_error). */
export function webhookUrlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http or https URL';
  if (!url.hostname) return 'must name a host';
  if (url.username || url.password) return 'must not carry credentials; authenticate deliveries with the signature instead';
  return null;
}

/**
 * Problems production finds without resolving names (422 unsafe_webhook_url): plain http, and an
 * IP address written into the URL that is loopback, private, link-local or metadata. Names
 * (localhost included) are judged by what they resolve to: resolveSafely.
 */
export function productionUrlProblem(url: URL): string | null {
  if (url.protocol !== 'https:') return 'production sends webhooks only to https URLs';
  const host = hostOf(url);
  if (net.isIP(host)) {
    const reason = unsafeAddressReason(host);
    if (reason) return `${host} is ${reason}`;
  }
  return null;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = async (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/**
 * Resolves the host once and checks every address it names. One unsafe address refuses the
 * host: otherwise a name listing a public and a private address could still reach the private one.
 */
export async function resolveSafely(hostname: string, resolve: Resolver = systemResolver): Promise<ResolvedAddress[]> {
  if (net.isIP(hostname)) {
    const reason = unsafeAddressReason(hostname);
    if (reason) throw new UnsafeAddressError(`${hostname} is ${reason}`);
    return [{ address: hostname, family: net.isIP(hostname) }];
  }
  let addresses: ResolvedAddress[];
  try {
    addresses = await resolve(hostname);
  } catch (err) {
    throw new UnsafeAddressError(`${hostname} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!addresses.length) throw new UnsafeAddressError(`${hostname} does not resolve`);
  for (const a of addresses) {
    const reason = unsafeAddressReason(a.address);
    if (reason) throw new UnsafeAddressError(`${hostname} resolves to ${a.address}, ${reason}`);
  }
  return addresses;
}

type LookupCallback = (err: Error | null, address: string | ResolvedAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls connect options: the socket connects to exactly the addresses checked
 * here, while TLS still verifies the certificate against the original host name (SNI).
 */
export function safeLookup(resolve: Resolver = systemResolver) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolveSafely(hostname, resolve).then(
      (addresses) => {
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: Error) => callback(err, []),
    );
  };
}
