// `npm run bench:webhooks -- --paced N`: the rate each webhook's deliveries arrived at, beside the rate it was set to.

/**
 * Per webhook (the receiver's path), from its first receipt times by `path eventId`: deliveries
 * after the first over the time from the first to the last, the pace itself; printed beside `set`.
 */
export function pacedRates(received: ReadonlyMap<string, number>, set: number): { lines: string[]; rates: number[] } {
  const byWebhook = new Map<string, { n: number; first: number; last: number }>();
  for (const [key, at] of received) {
    const path = key.slice(0, key.indexOf(' '));
    const seen = byWebhook.get(path);
    if (seen) Object.assign(seen, { n: seen.n + 1, first: Math.min(seen.first, at), last: Math.max(seen.last, at) });
    else byWebhook.set(path, { n: 1, first: at, last: at });
  }
  const achieved = [...byWebhook].sort(([a], [b]) => a.localeCompare(b))
    .map(([path, { n, first, last }]) => [path, last > first ? ((n - 1) * 1000) / (last - first) : NaN] as const);
  return {
    lines: achieved.map(([path, rate]) => `  ${path}: set ${set}/s, achieved ${rate.toFixed(1)}/s (${((rate / set) * 100).toFixed(1)} % of the set rate)`),
    rates: achieved.map(([, rate]) => rate),
  };
}
