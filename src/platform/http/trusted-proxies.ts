import net from 'node:net';

/** Returns a predicate telling whether a peer address is one of the configured trusted proxies. */
export function trustedProxyMatcher(entries: string[]): (address: string | undefined) => boolean {
  if (!entries.length) return () => false;
  const list = new net.BlockList();
  for (const entry of entries) {
    const [address, bits] = entry.split('/') as [string, string | undefined];
    const family = net.isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  }
  return (address) => {
    if (!address) return false;
    const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
    const family = net.isIP(plain) === 6 ? 'ipv6' : 'ipv4';
    return net.isIP(plain) !== 0 && list.check(plain, family);
  };
}
