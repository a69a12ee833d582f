/**
 * The capacity run's chart (docs/benchmark.md, "Capacity run"), as plain SVG text: two panels,
 * callback p99 and background lag p99 against the offered rate, one line per mode, log-scaled
 * seconds, the limits (1 s, 5 s) dashed. No library: the few lines below need no DOM, canvas or
 * browser, and the file opens in any browser or image viewer.
 */

/** One mode's measured points. */
export interface ChartSeries {
  label: string;
  color: string;
  /** Offered batches/s, callback p99 (s), background lag p99 (s; null when the mode has none). */
  points: { rate: number; p99: number; lag: number | null }[];
  /** Shown in the legend when the mode has no points (e.g. not available yet). */
  note?: string;
}

const W = 960;
const H = 460;
const PANEL_W = 400;
const PANEL_H = 300;
const TOP = 66;
const LEFTS = [70, 540];
/** The y axis: 10 ms to 100 s, log scale. */
const Y_MIN = 0.01;
const Y_MAX = 100;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The SVG document: `title` and a `subtitle` line, the series, the limits of the capacity criteria. */
export function capacityChart(
  title: string,
  subtitle: string,
  series: ChartSeries[],
  limits: { p99: number; lag: number },
): string {
  const rates = series.flatMap((s) => s.points.map((p) => p.rate));
  const xMax = Math.max(10, ...rates) * 1.05;
  const x = (left: number, rate: number) => left + (rate / xMax) * PANEL_W;
  const y = (seconds: number) => {
    const v = Math.min(Y_MAX, Math.max(Y_MIN, seconds));
    return (
      TOP +
      PANEL_H -
      ((Math.log10(v) - Math.log10(Y_MIN)) / (Math.log10(Y_MAX) - Math.log10(Y_MIN))) * PANEL_H
    );
  };
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="15">${esc(title)}</text>`,
    `<text x="${W / 2}" y="38" text-anchor="middle" font-size="11" fill="#555">${esc(subtitle)}</text>`,
  ];
  const panels: {
    left: number;
    name: string;
    value: (p: ChartSeries['points'][number]) => number | null;
    limit: number;
  }[] = [
    { left: LEFTS[0], name: 'callback p99 (s)', value: (p) => p.p99, limit: limits.p99 },
    { left: LEFTS[1], name: 'background lag p99 (s)', value: (p) => p.lag, limit: limits.lag },
  ];
  for (const panel of panels) {
    const { left } = panel;
    out.push(
      `<rect x="${left}" y="${TOP}" width="${PANEL_W}" height="${PANEL_H}" fill="none" stroke="#888"/>`,
      `<text x="${left + PANEL_W / 2}" y="${TOP - 8}" text-anchor="middle">${esc(panel.name)}</text>`,
      `<text x="${left + PANEL_W / 2}" y="${TOP + PANEL_H + 36}" text-anchor="middle">offered rate (batches/s)</text>`,
    );
    for (const s of [0.01, 0.1, 1, 10, 100]) {
      out.push(
        `<line x1="${left}" x2="${left + PANEL_W}" y1="${y(s)}" y2="${y(s)}" stroke="#eee"/>`,
        `<text x="${left - 6}" y="${y(s) + 4}" text-anchor="end">${s}</text>`,
      );
    }
    const step = xMax > 150 ? 50 : xMax > 60 ? 20 : 10;
    for (let r = 0; r <= xMax; r += step) {
      out.push(
        `<line x1="${x(left, r)}" x2="${x(left, r)}" y1="${TOP + PANEL_H}" y2="${TOP + PANEL_H + 5}" stroke="#888"/>`,
        `<text x="${x(left, r)}" y="${TOP + PANEL_H + 18}" text-anchor="middle">${r}</text>`,
      );
    }
    out.push(
      `<line x1="${left}" x2="${left + PANEL_W}" y1="${y(panel.limit)}" y2="${y(panel.limit)}" stroke="#c00" stroke-dasharray="6 4"/>`,
      `<text x="${left + PANEL_W - 4}" y="${y(panel.limit) - 4}" text-anchor="end" fill="#c00">limit ${panel.limit} s</text>`,
    );
    for (const s of series) {
      const pts = s.points
        .filter((p) => panel.value(p) !== null)
        .sort((a, b) => a.rate - b.rate)
        .map((p) => [x(left, p.rate), y(panel.value(p) as number)]);
      if (!pts.length) continue;
      out.push(
        `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(' ')}"/>`,
        ...pts.map(([a, b]) => `<circle cx="${a.toFixed(1)}" cy="${b.toFixed(1)}" r="3" fill="${s.color}"/>`),
      );
    }
  }
  series.forEach((s, i) => {
    const ly = H - 40 + (i % 2) * 16;
    const lx = 70 + Math.floor(i / 2) * 430;
    out.push(
      `<line x1="${lx}" x2="${lx + 24}" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"/>`,
      `<text x="${lx + 30}" y="${ly}">${esc(s.label + (s.note ? ` (${s.note})` : ''))}</text>`,
    );
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
