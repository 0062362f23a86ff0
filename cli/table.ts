import type { FleetStatus } from '../shared/protocol/index.js';

/** Renders rows as a left-aligned text table with a header line. */
export function renderTable(headers: string[], rows: Array<Array<string | number | null | undefined>>): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(headers), ...cells.map(line)].join('\n');
}

export function formatBytes(n: number | null): string {
  return n === null ? '-' : `${Math.round(n / 1024 / 1024)} MB`;
}

/** "12s", "5m", "3h", "2d" since an ISO time. */
export function formatAge(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}

/** Under placement by lease: the host that holds an agent and the claim's token (`mill_2 #41`), `-` when none does. */
export function formatPlacement(p: { host: string; token: number } | null | undefined): string {
  return p ? `${p.host} #${p.token}` : '-';
}

/**
 * Under placement by lease: this host's lease and every host of the fleet, one line each after the
 * first (`mill_2 pid 4121, renewed 0.4s ago`), with a lost lease or one another host ended said so.
 */
export function renderLease(lease: FleetStatus['supervisor']['lease'], now = Date.now()): string {
  if (!lease) return '';
  const mine = `lease ${lease.state} (${lease.lease_ms} ms)${lease.lost ? ` · last lost ${formatAge(lease.lost.at, now)} ago: ${lease.lost.reason}` : ''}`;
  const hosts = lease.hosts.map((h) => {
    const ago = Math.max(0, (now - Date.parse(h.renewed_at)) / 1000).toFixed(1);
    const state = h.expired_by ? `lease ended, marked by ${h.expired_by}` : Number(ago) * 1000 > lease.lease_ms ? 'lease ended' : 'live';
    return `  ${h.host}: pid ${h.pid}, renewed ${ago}s ago, ${state}`;
  });
  return [mine, ...hosts].join('\n');
}
