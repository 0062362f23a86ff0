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
