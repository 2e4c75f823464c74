/**
 * Charts as inline SVG, drawn here (no script, no network, no library in the page): bars, stacked
 * bars and a histogram with axes, ticks, labels and a legend. Every text that comes from the
 * destination goes through esc(). Each bar carries a <title>: the browser shows its value on hover.
 */
export interface Series {
  name: string;
  values: number[];
}

export interface ChartOptions {
  id: string;
  title: string;
  /** One label per bar (x axis). */
  labels: string[];
  series: Series[];
  /** How a value is written on the axis and in tooltips. */
  format?: (v: number) => string;
  /** Written in the plot when every value is 0. */
  empty?: string;
  width?: number;
  height?: number;
  /** Longer labels under each bar (histograms with few bins): all shown, no thinning. */
  allLabels?: boolean;
  /** Each bar's total written above it (histograms: a bin of 3 schools among 10,000 is still seen). */
  valueLabels?: boolean;
  /** A legend even for one series (its name says what the colour is, e.g. an error code). */
  legend?: boolean;
}

/** Distinguishable colours (Tableau 10, then lighter ones); series beyond them repeat with a darker outline. */
export const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
  '#a0cbe8',
  '#ffbe7d',
  '#8cd17d',
  '#86bcb6',
  '#f1ce63',
  '#d4a6c8',
];

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** 1234 -> "1.2k", 3_400_000 -> "3.4M" */
export function compact(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  return `${+v.toFixed(2)}`;
}

/** Values in bytes as a power-of-1024 unit fit for their largest: the axis then ticks in round numbers of it. */
export function inBytesUnit(values: number[]): { divisor: number; unit: string } {
  const max = Math.max(0, ...values);
  const k = max >= 2 ** 30 ? 3 : max >= 2 ** 20 ? 2 : max >= 2 ** 10 ? 1 : 0;
  return { divisor: 1024 ** k, unit: ['B', 'KiB', 'MiB', 'GiB'][k]! };
}

export function bytes(v: number): string {
  if (v >= 2 ** 30) return `${+(v / 2 ** 30).toFixed(1)} GiB`;
  if (v >= 2 ** 20) return `${+(v / 2 ** 20).toFixed(1)} MiB`;
  if (v >= 2 ** 10) return `${+(v / 2 ** 10).toFixed(1)} KiB`;
  return `${v} B`;
}

/** A "nice" axis maximum and step for values up to max (1, 2, 2.5 or 5 times a power of ten). */
export function niceScale(max: number, ticks = 5): { max: number; step: number } {
  if (!(max > 0)) return { max: 1, step: 0.25 };
  const raw = max / ticks;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * pow).find((s) => s >= raw)!;
  return { max: Math.ceil(max / step) * step, step };
}

const M = { top: 36, right: 16, bottom: 58, left: 64 };

/** Stacked bars (one series: plain bars), with a legend under the plot when there are several series. */
export function barChart(o: ChartOptions): string {
  const width = o.width ?? 920;
  const legendRows = o.series.length > 1 || (o.legend && o.series.length) ? Math.ceil(o.series.length / 4) : 0;
  const height = (o.height ?? 300) + legendRows * 18;
  const fmt = o.format ?? compact;
  const plotW = width - M.left - M.right;
  const plotH = (o.height ?? 300) - M.top - M.bottom;
  const n = o.labels.length;
  const totals = o.labels.map((_, i) => o.series.reduce((a, s) => a + (s.values[i] ?? 0), 0));
  const { max, step } = niceScale(Math.max(0, ...totals));
  const y = (v: number) => M.top + plotH - (v / max) * plotH;
  const slot = n ? plotW / n : plotW;
  const barW = Math.max(1, Math.min(48, slot * 0.8));
  const out: string[] = [
    `<svg class="chart" id="${esc(o.id)}" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${esc(o.title)}">`,
    `<text x="${M.left}" y="20" class="title">${esc(o.title)}</text>`,
  ];
  for (let v = 0; v <= max + step / 2; v += step) {
    out.push(`<line x1="${M.left}" x2="${width - M.right}" y1="${r(y(v))}" y2="${r(y(v))}" class="grid"/>`);
    out.push(`<text x="${M.left - 6}" y="${r(y(v) + 4)}" class="tick" text-anchor="end">${esc(fmt(v))}</text>`);
  }
  out.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${M.top + plotH}" class="axis"/>`);
  out.push(`<line x1="${M.left}" x2="${width - M.right}" y1="${M.top + plotH}" y2="${M.top + plotH}" class="axis"/>`);
  for (let i = 0; i < n; i++) {
    const x = M.left + i * slot + (slot - barW) / 2;
    let base = 0;
    o.series.forEach((s, k) => {
      const v = s.values[i] ?? 0;
      if (v <= 0) return;
      const top = y(base + v);
      const h = y(base) - top;
      const stroke = k >= PALETTE.length ? ' stroke="#333" stroke-width="0.5"' : '';
      out.push(
        `<rect x="${r(x)}" y="${r(top)}" width="${r(barW)}" height="${r(Math.max(h, 0.5))}" fill="${PALETTE[k % PALETTE.length]}"${stroke}><title>${esc(`${o.labels[i]}: ${s.name} ${fmt(v)}`)}</title></rect>`,
      );
      base += v;
    });
  }
  if (o.valueLabels)
    totals.forEach((t, i) => {
      const x = M.left + i * slot + slot / 2;
      out.push(`<text x="${r(x)}" y="${r(y(t) - 4)}" class="tick" text-anchor="middle">${esc(fmt(t))}</text>`);
    });
  out.push(...xLabels(o.labels, slot, M.top + plotH, o.allLabels === true));
  if (totals.every((t) => t === 0))
    out.push(
      `<text x="${M.left + plotW / 2}" y="${M.top + plotH / 2}" class="empty" text-anchor="middle">${esc(o.empty ?? 'nothing to show')}</text>`,
    );
  if (legendRows)
    out.push(
      ...legend(
        o.series.map((s) => s.name),
        (o.height ?? 300) - 8,
        width,
      ),
    );
  out.push('</svg>');
  return out.join('\n');
}

/** Labels under the bars, thinned so they never overlap (each label is about 70 px wide). */
function xLabels(labels: string[], slot: number, y0: number, all: boolean): string[] {
  const every = all ? 1 : Math.max(1, Math.ceil(70 / slot));
  const out: string[] = [];
  labels.forEach((l, i) => {
    if (i % every !== 0) return;
    const x = M.left + i * slot + slot / 2;
    out.push(`<text x="${r(x)}" y="${r(y0 + 16)}" class="tick" text-anchor="middle">${esc(l)}</text>`);
  });
  return out;
}

function legend(names: string[], y0: number, width: number): string[] {
  const colW = (width - M.left - M.right) / 4;
  return names.map((name, k) => {
    const x = M.left + (k % 4) * colW;
    const y = y0 + Math.floor(k / 4) * 18;
    return `<rect x="${r(x)}" y="${r(y - 10)}" width="12" height="12" fill="${PALETTE[k % PALETTE.length]}"/><text x="${r(x + 17)}" y="${r(y)}" class="legend">${esc(name)}</text>`;
  });
}

const r = (v: number) => Math.round(v * 10) / 10;
