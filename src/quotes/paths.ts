// Path search over the provider network. A path is: COLLECTION on the `from` rail, then zero,
// one or two CONVERSIONs, then PAYOUT on the `to` rail; each hop is served by one provider.
// Two conversions make a bridge through an intermediate asset (USD → USDC → EUR). Deeper
// chains are not searched: every extra hop adds a spread and a fee, so they never price well.
import { railAsset, railKey } from '../providers/adapter.ts';
import type { Availability, Capability, FeeSchedule, LegKind, Rail } from '../providers/adapter.ts';

/** What the search needs of a provider; ProviderAdapter satisfies it. */
export interface NetworkProvider {
  readonly id: string;
  readonly displayName: string;
  capabilities(): Capability[];
  availability(): Availability;
}

export interface LegCandidate {
  kind: LegKind;
  provider: NetworkProvider;
  availability: Availability;
  fromAsset: string;
  toAsset: string;
  /** The rail of a COLLECTION or PAYOUT leg. */
  rail?: Rail;
  fees: FeeSchedule;
  etaSeconds: number;
}

export type Path = LegCandidate[];

/** Why some part of the route has no usable provider; the quote turns these into advisories. */
export type Gap =
  | { code: 'no_active_provider'; stage: 'COLLECTION' | 'PAYOUT'; rail: Rail }
  | { code: 'no_active_provider'; stage: 'CONVERSION'; fromAsset: string; toAsset: string }
  | { code: 'no_provider'; stage: 'COLLECTION' | 'PAYOUT'; rail: Rail }
  | { code: 'no_conversion_path'; fromAsset: string; toAsset: string };

export interface SearchResult {
  paths: Path[];
  gaps: Gap[];
}

/** Upper bound on paths priced per quote, so a dense network cannot make one request expensive. */
export const MAX_PATHS = 2000;

interface Stage {
  usable: LegCandidate[];
  /** Providers that offer the hop but are DOWN. */
  down: number;
}

/**
 * Every path from `from` to `to` through providers that are not DOWN. DEGRADED providers are
 * kept (the caller warns about them). The order is deterministic: provider ids, then fewer hops.
 */
export function searchPaths(from: Rail, to: Rail, providers: readonly NetworkProvider[]): SearchResult {
  const sorted = [...providers].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const gaps: Gap[] = [];

  const collection = railStage(sorted, 'COLLECTION', from);
  const payout = railStage(sorted, 'PAYOUT', to);
  for (const [stage, rail, found] of [['COLLECTION', from, collection], ['PAYOUT', to, payout]] as const) {
    if (found.usable.length) continue;
    gaps.push(found.down ? { code: 'no_active_provider', stage, rail } : { code: 'no_provider', stage, rail });
  }

  const source = railAsset(from);
  const target = railAsset(to);
  const conversions = conversionChains(sorted, source, target, gaps);

  const paths: Path[] = [];
  if (!collection.usable.length || !payout.usable.length) return { paths, gaps };
  for (const chain of conversions) {
    for (const c of collection.usable) {
      for (const p of payout.usable) {
        if (paths.length >= MAX_PATHS) return { paths, gaps };
        paths.push([c, ...chain, p]);
      }
    }
  }
  return { paths, gaps };
}

function railStage(providers: readonly NetworkProvider[], kind: 'COLLECTION' | 'PAYOUT', rail: Rail): Stage {
  const key = railKey(rail);
  const stage: Stage = { usable: [], down: 0 };
  for (const provider of providers) {
    const capability = provider.capabilities().find((c) => c.kind === kind && railKey(c.rail) === key);
    if (!capability || capability.kind === 'CONVERSION') continue;
    const availability = provider.availability();
    if (availability === 'DOWN') {
      stage.down++;
      continue;
    }
    const asset = railAsset(rail);
    stage.usable.push({ kind, provider, availability, fromAsset: asset, toAsset: asset, rail, fees: capability.fees, etaSeconds: capability.etaSeconds });
  }
  return stage;
}

function conversionStage(providers: readonly NetworkProvider[], fromAsset: string, toAsset: string): Stage {
  const stage: Stage = { usable: [], down: 0 };
  for (const provider of providers) {
    const capability = provider.capabilities().find((c) => c.kind === 'CONVERSION' && c.from === fromAsset && c.to === toAsset);
    if (!capability) continue;
    const availability = provider.availability();
    if (availability === 'DOWN') {
      stage.down++;
      continue;
    }
    stage.usable.push({ kind: 'CONVERSION', provider, availability, fromAsset, toAsset, fees: capability.fees, etaSeconds: capability.etaSeconds });
  }
  return stage;
}

/** The conversion hops between the two assets: [] for the same asset, else direct pairs and bridges. */
function conversionChains(providers: readonly NetworkProvider[], source: string, target: string, gaps: Gap[]): LegCandidate[][] {
  if (source === target) return [[]];
  const chains: LegCandidate[][] = [];
  let downOnly = false;

  const direct = conversionStage(providers, source, target);
  for (const leg of direct.usable) chains.push([leg]);
  if (!direct.usable.length && direct.down) downOnly = true;

  const intermediates = new Set<string>();
  for (const provider of providers) {
    for (const c of provider.capabilities()) {
      if (c.kind === 'CONVERSION' && c.from === source && c.to !== target) intermediates.add(c.to);
    }
  }
  for (const via of [...intermediates].sort()) {
    const first = conversionStage(providers, source, via);
    const second = conversionStage(providers, via, target);
    const offered = (first.usable.length || first.down) && (second.usable.length || second.down);
    if (!offered) continue;
    if (!first.usable.length || !second.usable.length) {
      downOnly = true;
      continue;
    }
    for (const a of first.usable) for (const b of second.usable) chains.push([a, b]);
  }

  if (!chains.length) {
    gaps.push(downOnly ? { code: 'no_active_provider', stage: 'CONVERSION', fromAsset: source, toAsset: target } : { code: 'no_conversion_path', fromAsset: source, toAsset: target });
  }
  return chains;
}
