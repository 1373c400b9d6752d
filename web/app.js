// The gpuplan local page: a job editor, the API calls, and SVG plots drawn here (no libraries).
// Every number shown comes from the API's JSON (the CLI's --json for the same job); this file only
// formats numbers and places them on screen. See docs/web-page.md.
'use strict';
(function() {
const DEBOUNCE_MS = 600;  // wait this long after the last keystroke before asking the server
const LANG_KEY = 'gpuplan.lang';  // localStorage key of the chosen language
const SVG_NS = 'http://www.w3.org/2000/svg';
const GIB = 1024 * 1024 * 1024;  // bytes per GiB (display only)
const S_PER_HOUR = 3600;
const LOG_SCALE_SPAN = 8;   // an axis whose values span more than this factor is drawn in log scale
const LABEL_CHAR_PX = 6.2;  // average width of an 11 px label character, to cut long bar labels
const EXPORT_FORMATS = [
  'deepspeed', 'accelerate', 'torchrun', 'megatron', 'torchtitan', 'slurm', 'kubernetes',
  'skypilot', 'fabric'
];
const COLORS = [
  'var(--c1)', 'var(--c2)', 'var(--c3)', 'var(--c4)', 'var(--c5)', 'var(--c6)', 'var(--c7)',
  'var(--c8)', 'var(--c9)', 'var(--c10)', 'var(--c11)'
];

const state = {
  lang: 'en',
  mode: 'training',
  models: [],
  gen: 0,
  abort: null,
  timer: null,
  plan: null,
  poolMode: false,
  jobUsed: null,
  configUsed: null,
  selected: null,
  serving: null,
  fleet: null,
  lastBody: {},  // route -> the JSON body last sent (the browser test replays it)
};
window.gpuplan = state;

// ---------------------------------------------------------------------------------------------------------
// The one function that builds API requests. The body is {"job": {...job-file keys...},
// "config": {...a pasted config.json...}, "pool": {...pool file...}, "flags": {"flag": v}}
// (fleet: {"fleet": {...fleet file...}}); adapt here if the server's format moves.
function buildRequest(route, parts, opts) {
  const body = {};
  for (const k of ['job', 'config', 'pool', 'fleet'])
    if (parts[k]) body[k] = parts[k];
  if (parts.flags && Object.keys(parts.flags).length) body.flags = parts.flags;
  const text = JSON.stringify(body);
  state.lastBody[route] = text;
  const query = opts && opts.stream ? '?stream=1' : '';
  return {
    url: '/api/' + route + query,
    init: {
      method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: text,
      signal: opts && opts.signal
    },
  };
}
// ---------------------------------------------------------------------------------------------------------

// POSTs and returns {status, data}; a server-sent-event stream (text/event-stream) is read to its
// last event, with every "progress" event handed to onProgress. Network failures throw.
async function post(route, parts, opts) {
  const req = buildRequest(route, parts, opts);
  const resp = await fetch(req.url, req.init);
  const type = resp.headers.get('Content-Type') || '';
  if (type.includes('text/event-stream') && resp.body)
    return readEventStream(resp, opts && opts.onProgress);
  const text = await resp.text();
  let data;
  try {
    data = JSON.parse(text);
  } catch (e) {
    data = {error: {code: 'http_' + resp.status, message: text}};
  }
  return {status: resp.status, data};
}

async function readEventStream(resp, onProgress) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let last = null;
  const handle = (block) => {
    let event = 'message';
    const lines = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:'))
        event = line.slice(6).trim();
      else if (line.startsWith('data:'))
        lines.push(line.slice(5).replace(/^ /, ''));
    }
    if (!lines.length) return;
    let data;
    try {
      data = JSON.parse(lines.join('\n'));
    } catch (e) {
      data = {message: lines.join('\n')};
    }
    if (event === 'progress') {
      if (onProgress) onProgress(data);
    } else
      last = {event, data};
  };
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += decoder.decode(value, {stream: true}).replace(/\r\n/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      handle(buf.slice(0, i));
      buf = buf.slice(i + 2);
    }
  }
  if (buf.trim()) handle(buf);
  if (!last)
    return {
      status: 500,
      data: {error: {code: 'stream', message: 'the stream ended without a result'}}
    };
  // The last event: {"status": 200|400|422|..., "exit_code": N, "result": <the CLI's JSON>}.
  const d = last.data || {};
  if (typeof d.status === 'number' && 'result' in d) {
    const result = d.result || {error: {code: 'http_' + d.status, message: 'no result'}};
    return {status: d.status, data: result};
  }
  return {status: d.error ? 400 : resp.status, data: d};
}

async function getJson(url) {
  const resp = await fetch(url);
  return resp.json();
}

// --- text
// --------------------------------------------------------------------------------------------------
function t(key, vars) {
  const table = window.GPUPLAN_I18N[state.lang] || window.GPUPLAN_I18N.en;
  let s = key in table ? table[key] : (window.GPUPLAN_I18N.en[key] || key);
  if (vars)
    for (const [k, v] of Object.entries(vars)) s = s.split('{' + k + '}').join(String(v));
  return s;
}
function applyLanguage() {
  document.documentElement.lang = state.lang === 'zh' ? 'zh-CN' : 'en';
  document.querySelectorAll('[data-i18n]').forEach((el) => {
    el.textContent = t(el.dataset.i18n);
  });
  document.querySelectorAll('[data-i18n-title]').forEach((el) => {
    el.title = t(el.dataset.i18nTitle);
  });
  document.querySelectorAll('[data-i18n-placeholder]').forEach((el) => {
    el.placeholder = t(el.dataset.i18nPlaceholder);
  });
  document.title = t('app.title');
}
function locale() {
  return state.lang === 'zh' ? 'zh-CN' : 'en-US';
}
function num(v, digits) {
  return Number(v).toLocaleString(
      locale(), {maximumFractionDigits: digits, minimumFractionDigits: 0});
}
function fmtHours(s) {
  if (s == null) return '–';
  const h = s / S_PER_HOUR;
  if (h < 1) return num(s / 60, 0) + (state.lang === 'zh' ? ' 分钟' : ' min');
  return num(h, h < 10 ? 1 : 0) + (state.lang === 'zh' ? ' 小时' : ' h');
}
function fmtSec(s) {
  if (s == null) return '–';
  if (s < 1) return num(s * 1000, s < 0.01 ? 2 : 1) + ' ms';
  return num(s, s < 10 ? 2 : 1) + ' s';
}
function fmtUsd(v) {
  if (v == null) return '–';
  return '$' + num(v, v < 10 ? 2 : 0);
}
function fmtGiB(b) {
  return b == null ? '–' : num(b / GIB, 1) + ' GiB';
}
function fmtPct(f) {
  return f == null ? '–' : num(f * 100, 1) + '%';
}
function fmtRate(v) {
  return v == null ? '–' : num(v, v < 100 ? 1 : 0);
}

// --- DOM and SVG helpers
// ----------------------------------------------------------------------------------
function el(tag, attrs, children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}
function svgEl(tag, attrs, children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}
function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'text')
      node.textContent = v;
    else if (k.startsWith('on'))
      node.addEventListener(k.slice(2), v);
    else if (k === 'style')  // through the CSSOM: allowed under a Content-Security-Policy
      for (const decl of String(v).split(';')) {
        const at = decl.indexOf(':');
        if (at > 0) node.style.setProperty(decl.slice(0, at).trim(), decl.slice(at + 1).trim());
      }
    else
      node.setAttribute(k, v === true ? '' : v);
  }
}
function append(node, children) {
  for (const c of [].concat(children || [])) {
    if (c == null || c === false) continue;
    node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
}
function svgTitle(text) {
  return svgEl('title', {text});
}
function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}
function $(id) {
  return document.getElementById(id);
}

const tooltip = () => $('tooltip');
function showTip(ev, text) {
  const tip = tooltip();
  tip.textContent = text;
  tip.hidden = false;
  const pad = 14;
  let x = ev.clientX + pad;
  let y = ev.clientY + pad;
  const r = tip.getBoundingClientRect();
  if (x + r.width > window.innerWidth) x = ev.clientX - r.width - pad;
  if (y + r.height > window.innerHeight) y = ev.clientY - r.height - pad;
  tip.style.left = x + 'px';
  tip.style.top = y + 'px';
}
function hideTip() {
  tooltip().hidden = true;
}

// --- scales and axes
// ----------------------------------------------------------------------------------------
function makeScale(values, range, opts) {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  const log = !opts.zero && lo > 0 && hi / lo > LOG_SCALE_SPAN;
  if (opts.zero) lo = Math.min(0, lo);
  if (lo === hi) {
    lo = log ? lo / 2 : lo - Math.abs(lo || 1) * 0.5;
    hi = log ? hi * 2 : hi + Math.abs(hi || 1) * 0.5;
  }
  if (log) {
    lo /= 1.3;
    hi *= 1.3;
  } else {
    const pad = (hi - lo) * 0.06;
    if (!opts.zero || lo < 0) lo -= pad;
    hi += pad;
  }
  const f = log ? Math.log10 : (v) => v;
  const a = f(lo);
  const b = f(hi);
  const map = (v) => range[0] + (f(v) - a) / (b - a) * (range[1] - range[0]);
  map.log = log;
  map.ticks = () => (log ? logTicks(lo, hi) : linTicks(lo, hi));
  map.domain = [lo, hi];
  return map;
}
function linTicks(lo, hi) {
  const span = hi - lo;
  const raw = span / 6;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}
function logTicks(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * Math.pow(10, e);
      if (v >= lo && v <= hi) out.push(v);
    }
  }
  return out.length > 9 ? out.filter((v) => Math.abs(Math.log10(v) % 1) < 1e-9) : out;
}
function tickText(v) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return num(v / 1e6, 1) + 'M';
  if (a >= 1e4) return num(v / 1e3, 0) + 'k';
  return num(v, a < 1 ? 2 : a < 10 ? 1 : 0);
}

// A scatter plot: points [{x, y, cls, title, tip, onClick, attrs}], optional front line, limit
// lines.
function scatterPlot(host, o) {
  clear(host);
  const W = o.width || 760, H = o.height || 360, m = {l: 64, r: 20, t: 16, b: 48};
  const pts = o.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  if (!pts.length) {
    host.appendChild(el('p', {class: 'desc', text: o.empty || t('pareto.none')}));
    return null;
  }
  const xs = pts.map((p) => p.x).concat((o.vLines || []).map((l) => l.x));
  const ys = pts.map((p) => p.y).concat((o.hLines || []).map((l) => l.y));
  const X = makeScale(xs, [m.l, W - m.r], {zero: o.zero});
  const Y = makeScale(ys, [H - m.b, m.t], {zero: o.zero});
  const svg = svgEl(
      'svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': o.title}, svgTitle(o.title));
  const grid = svgEl('g', {class: 'grid'});
  const axis = svgEl('g', {class: 'axis'});
  for (const v of X.ticks()) {
    const x = X(v);
    grid.appendChild(svgEl('line', {x1: x, x2: x, y1: m.t, y2: H - m.b}));
    axis.appendChild(
        svgEl('text', {x, y: H - m.b + 15, 'text-anchor': 'middle', text: tickText(v)}));
  }
  for (const v of Y.ticks()) {
    const y = Y(v);
    grid.appendChild(svgEl('line', {x1: m.l, x2: W - m.r, y1: y, y2: y}));
    axis.appendChild(
        svgEl('text', {x: m.l - 6, y: y + 4, 'text-anchor': 'end', text: tickText(v)}));
  }
  axis.appendChild(svgEl('path', {d: `M${m.l},${m.t}V${H - m.b}H${W - m.r}`, fill: 'none'}));
  const logNote = (s) => (s.log ? ' · ' + t('axis.log') : '');
  axis.appendChild(svgEl('text', {
    class: 'axis-label',
    x: (m.l + W - m.r) / 2,
    y: H - 8,
    'text-anchor': 'middle',
    text: o.xLabel + logNote(X)
  }));
  axis.appendChild(svgEl('text', {
    class: 'axis-label',
    x: 14,
    y: (m.t + H - m.b) / 2,
    'text-anchor': 'middle',
    transform: `rotate(-90 14 ${(m.t + H - m.b) / 2})`,
    text: o.yLabel + logNote(Y)
  }));
  svg.appendChild(grid);
  svg.appendChild(axis);
  for (const l of o.vLines || []) {
    svg.appendChild(svgEl(
        'line', {class: 'limit', x1: X(l.x), x2: X(l.x), y1: m.t, y2: H - m.b}, svgTitle(l.label)));
    const right = X(l.x) > W * 0.75;  // a label near the right edge reads leftwards
    svg.appendChild(svgEl('text', {
      class: 'limit-label',
      x: X(l.x) + (right ? -4 : 4),
      y: m.t + 10,
      'text-anchor': right ? 'end' : 'start',
      text: l.label
    }));
  }
  for (const l of o.hLines || []) {
    svg.appendChild(svgEl(
        'line', {class: 'limit', x1: m.l, x2: W - m.r, y1: Y(l.y), y2: Y(l.y)}, svgTitle(l.label)));
    svg.appendChild(
        svgEl('text', {class: 'limit-label', x: m.l + 6, y: Y(l.y) - 4, text: l.label}));
  }
  if (o.front && o.front.length > 1) {
    const d = o.front.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y))
                  .map((p, i) => (i ? 'L' : 'M') + X(p.x).toFixed(1) + ',' + Y(p.y).toFixed(1))
                  .join('');
    svg.appendChild(svgEl('path', {class: 'front', d}));
  }
  for (const p of pts) {
    const c = svgEl(
        'circle',
        Object.assign(
            {
              cx: X(p.x).toFixed(1),
              cy: Y(p.y).toFixed(1),
              r: p.r || 6,
              class: p.cls,
              tabindex: 0,
              role: 'button',
              'aria-label': p.title
            },
            p.attrs),
        svgTitle(p.title));
    c.addEventListener('mousemove', (ev) => showTip(ev, p.tip));
    c.addEventListener('mouseleave', hideTip);
    if (p.onClick) {
      c.addEventListener('click', () => {
        hideTip();
        p.onClick();
      });
      c.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter' || ev.key === ' ') {
          ev.preventDefault();
          p.onClick();
        }
      });
    }
    svg.appendChild(c);
  }
  host.appendChild(svg);
  return svg;
}

// A label cut to what fits in width px of 11 px text (the whole label stays in the <title>).
function shorten(label, width) {
  const max = Math.floor(width / LABEL_CHAR_PX);
  return label.length > max ? label.slice(0, max - 1) + '…' : label;
}

// Horizontal stacked bars: rows [{label, segments: [{key, value, label, color}], text}], vLines
// [{value, label, cls}].
function stackedBars(host, o) {
  clear(host);
  const rowH = o.rowHeight || 26, gap = 10, labelW = o.labelWidth || 230,
        textW = o.textWidth || 190;
  const W = o.width || 760, m = {t: o.vLines && o.vLines.length ? 28 : 8, b: 24};
  const rows = o.rows;
  const H = m.t + rows.length * (rowH + gap) + m.b;
  const sums = rows.map((r) => r.segments.reduce((a, s) => a + Math.max(0, s.value || 0), 0));
  const max = Math.max(...sums, ...(o.vLines || []).map((l) => l.value), 1e-12);
  const x0 = labelW, x1 = W - textW;
  const X = (v) => x0 + (v / max) * (x1 - x0);
  const svg = svgEl(
      'svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': o.title}, svgTitle(o.title));
  rows.forEach((r, i) => {
    const y = m.t + i * (rowH + gap);
    const g = svgEl('g', {class: 'bar-row' + (r.cls ? ' ' + r.cls : ''), 'data-testid': r.testid});
    if (r.label) {
      g.appendChild(svgEl(
          'text', {
            x: labelW - 8,
            y: y + rowH / 2 + 4,
            'text-anchor': 'end',
            text: shorten(r.label, labelW)
          },
          svgTitle(r.label)));
    }
    let acc = 0;
    for (const s of r.segments) {
      const v = Math.max(0, s.value || 0);
      if (v <= 0) continue;
      const rect = svgEl(
          'rect', {
            class: 'seg',
            x: X(acc).toFixed(2),
            y,
            width: Math.max(0.5, X(acc + v) - X(acc)).toFixed(2),
            height: rowH,
            fill: s.color,
            'data-key': s.key
          },
          svgTitle(s.label + ': ' + s.text));
      rect.addEventListener('mousemove', (ev) => showTip(ev, s.label + ': ' + s.text));
      rect.addEventListener('mouseleave', hideTip);
      g.appendChild(rect);
      acc += v;
    }
    g.appendChild(svgEl('text', {x: X(acc) + 6, y: y + rowH / 2 + 4, text: r.text || ''}));
    svg.appendChild(g);
  });
  for (const l of o.vLines || []) {
    const x = X(l.value);
    svg.appendChild(svgEl(
        'line', {class: l.cls || 'capacity', x1: x, x2: x, y1: m.t - 6, y2: H - m.b + 4},
        svgTitle(l.label)));
    const anchor = x > W * 0.6 ? 'end' : x < W * 0.3 ? 'start' : 'middle';
    svg.appendChild(
        svgEl('text', {x, y: l.top ? m.t - 10 : H - 6, 'text-anchor': anchor, text: l.label}));
  }
  host.appendChild(svg);
  if (o.legend) {
    host.appendChild(
        el('div', {class: 'legend'}, o.legend.map((s) => el('span', {
                                                    style: `--swatch:${s.color}`,
                                                    text: s.label + (s.text ? ' ' + s.text : '')
                                                  }))));
  }
}

// --- the editor
// ---------------------------------------------------------------------------------------------
const field = (id) => $(id).value.trim();
function numberField(id) {
  const v = field(id);
  if (v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) ?
      n :
      v;  // a non-number goes to the server as typed: its error names the key
}
function parseJsonField(id, badKey) {
  const text = field(id);
  if (!text) return {value: null};
  try {
    return {value: JSON.parse(text)};
  } catch (e) {
    return {error: t(badKey, {msg: e.message})};
  }
}
function prune(o) {
  for (const k of Object.keys(o)) {
    if (o[k] === undefined || o[k] === '')
      delete o[k];
    else if (o[k] && typeof o[k] === 'object' && !Array.isArray(o[k])) {
      prune(o[k]);
      if (!Object.keys(o[k]).length) delete o[k];
    }
  }
  return o;
}
function readModel() {
  const cfg = parseJsonField('f-config', 'editor.config.bad');
  if (cfg.error) return cfg;
  if (cfg.value) return {value: undefined, config: cfg.value};  // the content, never a path
  return {value: {preset: field('f-preset')}};
}
function readTrainingJob() {
  const model = readModel();
  if (model.error) return model;
  const clouds = [...document.querySelectorAll('#f-clouds input:checked')].map((c) => c.value);
  const gpus = [...$('f-gpus').selectedOptions].map((o) => o.value);
  const job = prune({
    model: model.value,
    training: {
      method: field('f-method'),
      tokens: numberField('f-tokens'),
      global_batch: numberField('f-global-batch'),
      seq_len: numberField('f-seq-len')
    },
    constraints: {
      deadline_hours: numberField('f-deadline'),
      budget_usd: numberField('f-budget'),
      max_gpus: numberField('f-max-gpus'),
      objective: field('f-objective'),
      spot: field('f-spot'),
      clouds: clouds.length ? clouds : undefined,
      gpus: gpus.length ? gpus : undefined
    },
  });
  let pool = null;
  if ($('f-use-pool').checked) {
    const p = parseJsonField('f-pool', 'editor.pool.bad');
    if (p.error) return p;
    pool = p.value;
  }
  return {value: job, config: model.config, pool};
}
function readServingJob() {
  const model = readModel();
  if (model.error) return model;
  return {
    config: model.config,
    value: prune({
      model: model.value,
      serving: {
        engine: field('f-engine'),
        input_len: numberField('f-input-len'),
        output_len: numberField('f-output-len'),
        request_rate: numberField('f-rate'),
        ttft_p90_ms: numberField('f-ttft'),
        tpot_p90_ms: numberField('f-tpot')
      }
    })
  };
}

// --- running
// --------------------------------------------------------------------------------------------------
function setStatus(text, kind) {
  const s = $('status');
  s.textContent = text;
  s.className = 'status' + (kind === 'busy' ? ' busy' : '');
  s.dataset.state = kind || '';
}
function showError(title, err) {
  const box = $('error');
  clear(box);
  box.hidden = false;
  box.appendChild(el('h3', {text: title}));
  if (err && typeof err === 'object') {
    if (err.message) box.appendChild(el('div', {text: err.message}));
    const bits = [];
    if (err.key) bits.push(t('err.key') + ': ' + err.key);
    if (err.location) bits.push(t('err.where') + ': ' + err.location);
    if (bits.length) box.appendChild(el('div', {class: 'desc', text: bits.join(' · ')}));
  } else if (err)
    box.appendChild(el('div', {text: String(err)}));
}
function hideError() {
  $('error').hidden = true;
}

function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(run, DEBOUNCE_MS);
}
function run() {
  clearTimeout(state.timer);
  if (state.abort) state.abort.abort();
  state.abort = new AbortController();
  const gen = ++state.gen;
  const signal = state.abort.signal;
  const job = {training: runTraining, serving: runServing, fleet: runFleet}[state.mode];
  job(gen, signal).catch((e) => {
    if (e.name === 'AbortError' || gen !== state.gen) return;
    setStatus('', 'error');
    showError(t('status.network', {msg: e.message}));
  });
}
const stale = (gen) => gen !== state.gen;

async function runTraining(gen, signal) {
  const read = readTrainingJob();
  if (read.error) {
    showError(t('status.error'), read.error);
    return;
  }
  setStatus(t('status.running'), 'busy');
  const started = performance.now();
  const res = await post('plan', {job: read.value, config: read.config, pool: read.pool}, {
    stream: true,
    signal,
    onProgress: (p) => {
      if (!stale(gen)) setStatus(t('status.progress', {text: progressText(p)}), 'busy');
    }
  });
  if (stale(gen)) return;
  state.jobUsed = read.value;
  state.configUsed = read.config;
  state.poolMode = !!read.pool;
  state.selected = null;
  if (res.data && res.data.error) {
    setStatus('', 'error');
    showError(t('status.error'), res.data.error);
    state.plan = null;
    renderTraining();
    return;
  }
  hideError();
  state.plan = res.data;
  if (res.status === 422) showInfeasible(res.data);
  renderTraining();
  const rows = state.plan.plans || [];
  if (rows.length) selectSetup('plans', 0);
  const ms = Math.round(performance.now() - started);
  setStatus(searchSummary(state.plan) + ' ' + t('status.done', {ms: num(ms, 0)}), 'done');
}
function progressText(p) {
  if (p == null) return '';
  if (typeof p !== 'object') return String(p);
  if (p.message) return p.message;
  if (typeof p.done === 'number' && typeof p.total === 'number')
    return num(p.done, 0) + ' / ' + num(p.total, 0);
  return Object.entries(p)
      .filter(([, v]) => typeof v !== 'object')
      .map(([k, v]) => k + ' ' + v)
      .join(', ');
}
function searchSummary(plan) {
  if (plan.pool)
    return t(
        'plan.pool_searched', {candidates: num(plan.candidates || 0, 0), pool: plan.pool.name});
  if (plan.considered != null)
    return t(
        'plan.searched',
        {considered: num(plan.considered, 0), evaluated: num(plan.evaluated || 0, 0)});
  return '';
}
function showInfeasible(data) {
  const box = $('error');
  clear(box);
  box.hidden = false;
  box.appendChild(el('h3', {text: t('status.infeasible')}));
  if (data.relax && data.relax.message)
    box.appendChild(el('div', {text: t('infeasible.relax') + ': ' + data.relax.message}));
  const rej = data.rejected || data.rejections || [];
  if (rej.length) {
    box.appendChild(el('div', {class: 'desc', text: t('infeasible.rejected') + ':'}));
    box.appendChild(el('ul', {}, rej.map((r) => el('li', {
                                           text: (r.count != null ? num(r.count, 0) + ' × ' : '') +
                                               (r.reason || r.message || JSON.stringify(r))
                                         }))));
  }
}

// --- training results
// -----------------------------------------------------------------------------------------
function rowTime(r) {
  return r.time_s != null ? r.time_s : r.time_to_train_s;
}
function layoutText(r) {
  const p = r.parallel || r.layout || {};
  let s = `tp${p.tp} pp${p.pp} dp${p.dp}`;
  if (p.cp > 1) s += ` cp${p.cp}`;
  if (p.zero != null) s += ` z${p.zero}`;
  return s;
}
function instanceText(r) {
  if (r.instance)
    return r.instance +
        (r.cost_breakdown && r.cost_breakdown.price_kind === 'spot' ? ' (spot)' : '');
  if (r.layout && r.layout.order)
    return r.layout.order.map((o) => `${o.group} ×${o.nodes}`).join(' + ');
  return '';
}
function setupTip(r) {
  const lines = [instanceText(r)];
  if (r.gpu)
    lines.push(
        t('tooltip.gpus', {n: r.gpus, gpu: r.gpu}) +
        (r.nodes ? ` (${r.nodes} × ${r.gpus / r.nodes})` : ''));
  else if (r.layout)
    lines.push(t('col.gpus') + ' ' + r.layout.gpus);
  lines.push(
      layoutText(r) + (r.micro_batch ? ` · mb ${r.micro_batch} × ${r.grad_accum_steps}` : ''));
  if (r.engine) lines.push(t('col.engine') + ': ' + r.engine);
  lines.push(
      t('col.time') + ': ' + fmtHours(rowTime(r)) + ' · ' + t('col.cost') + ': ' +
      fmtUsd(r.cost_usd));
  return lines.join('\n');
}
function renderTraining() {
  const plan = state.plan;
  renderPareto(plan);
  renderPlansTable(plan);
  $('stages-panel').hidden = !state.poolMode;
  $('memory-panel').hidden = state.poolMode;
  if (!plan || !(plan.plans || []).length) {
    clear($('selected')).appendChild(el('p', {class: 'desc', text: t('selected.none')}));
    for (const id of ['wall', 'cost', 'step', 'memory', 'stages']) clear($(id));
    clear($('export')).appendChild(el('p', {class: 'desc', text: t('export.none')}));
  }
}
function renderPareto(plan) {
  const host = $('pareto');
  if (!plan) {
    clear(host);
    host.dataset.count = '0';
    return;
  }
  const points = [];
  const pareto = plan.pareto || [];
  const plans = plan.plans || [];
  plans.forEach((r, i) => points.push({
    x: rowTime(r) / S_PER_HOUR,
    y: r.cost_usd,
    cls: 'plan-point',
    r: 8,
    title: `${t('pareto.plan')} ${i + 1}: ${instanceText(r)}`,
    tip: `#${i + 1} ${setupTip(r)}`,
    attrs: {'data-testid': 'plan-point', 'data-index': i, 'data-kind': 'plans'},
    onClick: () => selectSetup('plans', i)
  }));
  pareto.forEach((r, i) => points.push({
    x: rowTime(r) / S_PER_HOUR,
    y: r.cost_usd,
    cls: 'pareto-point',
    r: 5.5,
    title: `${t('pareto.point')}: ${instanceText(r)}`,
    tip: setupTip(r),
    attrs: {'data-testid': 'pareto-point', 'data-index': i, 'data-kind': 'pareto'},
    onClick: () => selectSetup('pareto', i)
  }));
  const c = (plan.inputs && plan.inputs.constraints) || {};
  const vLines = c.deadline_hours ?
      [{x: c.deadline_hours, label: t('pareto.deadline') + ' ' + num(c.deadline_hours, 1) + ' h'}] :
      [];
  const hLines = c.budget_usd ?
      [{y: c.budget_usd, label: t('pareto.budget') + ' ' + fmtUsd(c.budget_usd)}] :
      [];
  const front =
      pareto.map((r) => ({x: rowTime(r) / S_PER_HOUR, y: r.cost_usd})).sort((a, b) => a.x - b.x);
  scatterPlot(host, {
    title: t('pareto.title'),
    points,
    front,
    vLines,
    hLines,
    xLabel: t('pareto.x'),
    yLabel: t('pareto.y'),
    height: 380
  });
  host.dataset.count = String(pareto.length);
  host.dataset.plans = String(plans.length);
}
function renderPlansTable(plan) {
  const host = clear($('plans'));
  if (!plan || !(plan.plans || []).length) return;
  const pool = state.poolMode;
  const head = pool ?
      ['col.rank', 'col.gpus', 'col.layout', 'col.instance', 'col.time', 'col.cost', 'col.mfu'] :
      [
        'col.rank', 'col.engine', 'col.instance', 'col.gpus', 'col.layout', 'col.mem', 'col.time',
        'col.cost', 'col.goodput'
      ];
  const numeric =
      new Set(['col.gpus', 'col.mem', 'col.time', 'col.cost', 'col.mfu', 'col.goodput']);
  const tbody = el('tbody');
  plan.plans.forEach((r, i) => {
    const cells = pool ?
        [
          i + 1, r.layout.gpus, layoutText(r), instanceText(r), fmtHours(rowTime(r)),
          fmtUsd(r.cost_usd), fmtPct(r.mfu)
        ] :
        [
          i + 1, r.engine + (r.family_best ? '*' : ''), instanceText(r),
          `${r.nodes}×${r.gpus / r.nodes}`, layoutText(r), fmtGiB(r.memory_per_gpu_bytes),
          fmtHours(rowTime(r)), fmtUsd(r.cost_usd), fmtPct(r.goodput)
        ];
    tbody.appendChild(
        el('tr', {
          'data-index': i,
          tabindex: 0,
          onclick: () => selectSetup('plans', i),
          onkeydown: (ev) => {
            if (ev.key === 'Enter') selectSetup('plans', i);
          }
        },
           cells.map(
               (c, k) => el('td', {class: numeric.has(head[k]) ? 'num' : null, text: String(c)}))));
  });
  host.appendChild(el('table', {'data-testid': 'plans-table'}, [
    el('thead', {},
       el('tr', {}, head.map((h) => el('th', {class: numeric.has(h) ? 'num' : null, text: t(h)})))),
    tbody
  ]));
}

function selectSetup(kind, i) {
  if (!state.plan) return;
  const row = (kind === 'pareto' ? state.plan.pareto : state.plan.plans)[i];
  if (!row) return;
  state.selected = {kind, i};
  document.querySelectorAll('#pareto circle')
      .forEach(
          (c) => c.classList.toggle(
              'selected-point', c.dataset.kind === kind && Number(c.dataset.index) === i));
  document.querySelectorAll('#plans tbody tr')
      .forEach(
          (tr) => tr.classList.toggle('sel', kind === 'plans' && Number(tr.dataset.index) === i));
  renderSelectedFacts(row);
  if (state.poolMode) {
    renderPoolSetup(row);
    return;
  }
  renderWall(row);
  renderCost(row);
  const gen = state.gen;
  const pinned = pinnedJob(row);
  const selKey = kind + i;
  const still = () =>
      gen === state.gen && state.selected && state.selected.kind + state.selected.i === selKey;
  const fmt = defaultExportFormat(row);
  $('export-format').value = fmt;
  clear($('step'));
  clear($('memory'));
  post('estimate', {job: pinned, config: state.configUsed})
      .then((res) => {
        if (still()) renderStep(res.data, res.data.breakdown_s);
      })
      .catch(() => {});
  post('memory', {job: pinned, config: state.configUsed})
      .then((res) => {
        if (still()) renderMemory(res.data);
      })
      .catch(() => {});
  loadExport(row, fmt, still);
}
// The selected setup as a pinned job: the planner's own job keys for that row (flattened "a.b":
// "v"), with the editor's model section (a pasted config.json is posted again as content).
function pinnedJob(row) {
  const job = {};
  for (const [k, v] of Object.entries(row.job || {})) {
    const parts = k.split('.');
    let o = job;
    for (const p of parts.slice(0, -1)) o = o[p] = o[p] || {};
    o[parts[parts.length - 1]] = typedValue(v);
  }
  delete job.model;
  if (state.jobUsed.model) job.model = Object.assign({}, state.jobUsed.model);
  return job;
}
function typedValue(v) {
  if (typeof v !== 'string') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v)) return Number(v);
  return v;
}
function defaultExportFormat(row) {
  const fam = row.engine_family || row.engine;
  return EXPORT_FORMATS.includes(fam) ? fam : 'torchrun';
}

function factsList(pairs) {
  return el(
      'dl', {class: 'facts'},
      pairs.filter((p) => p[1] != null && p[1] !== '')
          .flatMap(([k, v]) => [el('dt', {text: k}), el('dd', {text: String(v)})]));
}
function renderSelectedFacts(r) {
  const host = clear($('selected'));
  const p = r.parallel || r.layout || {};
  const pairs = [
    [t('selected.tier'), r.tier],
    [
      t('selected.instance'),
      instanceText(r) + (r.gpu ? ' · ' + t('tooltip.gpus', {n: r.gpus, gpu: r.gpu}) : '')
    ],
    [t('layout.tp'), p.tp],
    [t('layout.pp'), p.pp],
    [t('layout.dp'), p.dp],
    [t('layout.mb'), r.micro_batch != null ? r.micro_batch : p.micro_batch],
    [t('layout.accum'), r.grad_accum_steps],
    [t('layout.zero'), p.zero],
    [t('col.engine'), r.engine],
    [t('col.time'), fmtHours(rowTime(r))],
    [t('col.cost'), fmtUsd(r.cost_usd)],
    [t('selected.step'), fmtSec(r.step_time_s)],
    [
      t('selected.tokens_per_s'),
      r.tokens_per_s != null ? fmtRate(r.tokens_per_s) + ' tokens/s' : null
    ],
    [t('selected.mfu'), fmtPct(r.mfu)],
    [t('col.mem'), r.memory_per_gpu_bytes != null ? fmtGiB(r.memory_per_gpu_bytes) : null],
    [t('selected.bottleneck'), r.bottleneck],
    [t('selected.warnings'), (r.warnings || []).join('; ')],
    ['', r.engine_note],
  ];
  host.appendChild(factsList(pairs));
}
function renderWall(r) {
  const segs =
      [
        ['startup_s', 'wall.startup'], ['train_s', 'wall.train'],
        ['checkpoint_stall_s', 'wall.ckpt'], ['expected_lost_s', 'wall.lost'],
        ['final_save_s', 'wall.final']
      ]
          .map(
              ([k, label], i) =>
                  ({key: k, value: r[k], label: t(label), text: fmtHours(r[k]), color: COLORS[i]}));
  stackedBars($('wall'), {
    title: t('wall.title'),
    width: 420,
    labelWidth: 8,
    textWidth: 150,
    rows: [{
      label: '',
      segments: segs,
      text: fmtHours(r.time_s) + ' · ' + t('wall.goodput', {pct: fmtPct(r.goodput)}),
      testid: 'wall-bar'
    }],
    legend: segs.map((s) => ({label: s.label, text: s.text, color: s.color}))
  });
}
function renderCost(r) {
  const cb = r.cost_breakdown;
  if (!cb) {
    clear($('cost'));
    return;
  }
  const segs =
      [
        ['compute_usd', 'cost.compute'], ['storage_usd', 'cost.storage'],
        ['checkpoint_fs_usd', 'cost.ckptfs'], ['requests_usd', 'cost.requests']
      ]
          .map(
              ([k, label], i) =>
                  ({key: k, value: cb[k], label: t(label), text: fmtUsd(cb[k]), color: COLORS[i]}));
  const factor = r.cost_usd != null && state.plan.inputs && state.plan.inputs.constraints ?
      state.plan.inputs.constraints.rerun_factor :
      null;
  stackedBars($('cost'), {
    title: t('cost.title'),
    width: 420,
    labelWidth: 8,
    textWidth: 80,
    rows: [{label: '', segments: segs, text: fmtUsd(cb.subtotal_usd), testid: 'cost-bar'}],
    vLines: cb.with_rerun_usd != null ? [{
      value: cb.with_rerun_usd,
      cls: 'usable',
      top: true,
      label:
          t('cost.rerun') + (factor ? ' ×' + num(factor, 2) : '') + ' ' + fmtUsd(cb.with_rerun_usd)
    }] :
                                        [],
    legend: segs.map((s) => ({label: s.label, text: s.text, color: s.color}))
  });
}
const STEP_KEYS = [
  'compute', 'tp_comm', 'pp_comm', 'dp_comm', 'cp_comm', 'ep_comm', 'bubble', 'optimizer', 'data',
  'checkpoint', 'overhead'
];
function renderStep(data, breakdown) {
  const host = $('step');
  if (!data || data.error || !breakdown) {
    clear(host);
    if (data && data.error) host.appendChild(el('p', {class: 'desc', text: data.error.message}));
    return;
  }
  const get = (k) => (breakdown[k] != null ? breakdown[k] : breakdown[k + '_s']);
  const segs = STEP_KEYS
                   .map((k, i) => ({
                          key: k,
                          value: get(k),
                          label: t('step.' + k),
                          text: fmtSec(get(k)),
                          color: COLORS[i]
                        }))
                   .filter((s) => s.value != null && s.value > 0);
  stackedBars(host, {
    title: t('step.title'),
    labelWidth: 8,
    textWidth: 90,
    rows: [{label: '', segments: segs, text: fmtSec(data.step_time_s), testid: 'step-bar'}],
    legend: segs.map((s) => ({label: s.label, text: s.text, color: s.color}))
  });
  if (data.bottleneck) host.appendChild(el('p', {class: 'desc', text: data.bottleneck}));
}
const MEM_KEYS = ['weights', 'gradients', 'optimizer', 'activations', 'buffers', 'overhead'];
function renderMemory(data) {
  const host = $('memory');
  if (!data || data.error || !data.per_gpu) {
    clear(host);
    if (data && data.error) host.appendChild(el('p', {class: 'desc', text: data.error.message}));
    return;
  }
  const pg = data.per_gpu;
  const segs = MEM_KEYS.map((k, i) => ({
                              key: k,
                              value: pg[k + '_bytes'],
                              label: t('mem.' + k),
                              text: fmtGiB(pg[k + '_bytes']),
                              color: COLORS[i]
                            }));
  const rows = [{
    label: t('mem.this'),
    segments: segs,
    text: fmtGiB(pg.total_bytes) + ' · ' + t(data.fits ? 'mem.fits' : 'mem.nofit'),
    testid: 'memory-bar'
  }];
  for (const s of data.suggestions || []) {
    rows.push({
      label: s.step,
      cls: 'saving-step',
      segments: [{
        key: 'total',
        value: s.total_bytes,
        label: s.step,
        text: fmtGiB(s.total_bytes) + ' (' + s.change + ')',
        color: s.fits ? 'var(--ok)' : 'var(--bad)'
      }],
      text: fmtGiB(s.total_bytes) + ' · ' + t('mem.saves', {v: fmtGiB(s.saved_bytes)})
    });
  }
  const vLines = [];
  if (data.gpu && data.gpu.capacity_bytes)
    vLines.push({
      value: data.gpu.capacity_bytes,
      cls: 'capacity',
      top: true,
      label: t('mem.capacity', {v: fmtGiB(data.gpu.capacity_bytes)})
    });
  if (data.margin && data.margin.usable_bytes)
    vLines.push({
      value: data.margin.usable_bytes,
      cls: 'usable',
      label: t('mem.usable', {v: fmtGiB(data.margin.usable_bytes)})
    });
  stackedBars(host, {
    title: t('mem.title'),
    rows,
    vLines,
    rowHeight: 20,
    labelWidth: 300,
    legend: segs.map((s) => ({label: s.label, text: s.text, color: s.color}))
  });
}
function renderPoolSetup(r) {
  clear($('wall'));
  clear($('cost'));
  clear($('memory'));
  $('wall').appendChild(factsList([
    [t('col.time'), fmtHours(r.time_to_train_s)], [t('selected.step'), fmtSec(r.step_time_s)],
    [t('selected.tokens_per_s'), fmtRate(r.tokens_per_s) + ' tokens/s']
  ]));
  $('cost').appendChild(
      factsList([[t('col.cost'), fmtUsd(r.cost_usd)], ['USD/h', fmtUsd(r.cost_per_hour_usd)]]));
  renderStep(r, r.breakdown);
  renderStages(r);
  clear($('export')).appendChild(el('p', {class: 'desc', text: t('export.pool')}));
}
function renderStages(r) {
  const host = clear($('stages'));
  const groups = [...new Set((r.stages || []).map((s) => s.group))];
  for (const s of r.stages || []) {
    const color = COLORS[groups.indexOf(s.group) % COLORS.length];
    const over = s.memory_bytes > s.capacity_bytes;
    host.appendChild(
        el('div', {class: 'stage-card', style: `--swatch:${color}`, 'data-testid': 'stage-card'}, [
          el('h3', {text: t('stages.stage', {n: s.stage})}),
          el('div', {text: `${s.group}: ${t('tooltip.gpus', {n: s.gpus, gpu: s.gpu})}`}),
          el('div', {
            text: `tp${s.tp} dp${s.dp}${s.cp > 1 ? ' cp' + s.cp : ''} · ${
                t('stages.layers', {n: s.layers})}`
          }),
          el('div', {
            class: 'meter' + (over ? ' over' : ''),
            role: 'meter',
            'aria-valuemin': 0,
            'aria-valuemax': s.capacity_bytes,
            'aria-valuenow': s.memory_bytes,
            title: `${fmtGiB(s.memory_bytes)} / ${fmtGiB(s.capacity_bytes)}`
          },
             el('div', {
               style:
                   `width:${Math.min(100, (100 * s.memory_bytes) / s.capacity_bytes).toFixed(1)}%`
             })),
          el('div', {
            class: 'desc',
            text: `${fmtGiB(s.memory_bytes)} / ${fmtGiB(s.capacity_bytes)} · ${
                t('stages.microbatch', {v: fmtSec(s.microbatch_s)})}`
          }),
        ]));
  }
  if ((r.idle || []).length) {
    host.appendChild(el('div', {class: 'stage-card', style: '--swatch:var(--c8)'}, [
      el('h3', {text: t('stages.idle')}),
      ...r.idle.map(
          (d) => el(
              'div', {text: `${d.group}: ${t('tooltip.gpus', {n: d.gpus, gpu: d.gpu})}. ${d.why}`}))
    ]));
  }
  if ((r.placement || []).length)
    host.appendChild(el('pre', {class: 'launch placement', text: r.placement.join('\n')}));
}

// --- export
// ---------------------------------------------------------------------------------------------------
function loadExport(row, fmt, still) {
  const flags = {to: fmt};
  if (row.instance) flags.instance = row.instance;
  showExport($('export'), {job: pinnedJob(row), config: state.configUsed, flags}, still);
}
// Posts an export request and shows its files in host (each with a download link);
// host[data-state] is loading, then done or error.
function showExport(host, parts, still) {
  clear(host);
  host.dataset.state = 'loading';
  const fail = (text) => {
    clear(host);
    host.dataset.state = 'error';
    host.appendChild(el('p', {class: 'error', text}));
  };
  post('export', parts)
      .then((res) => {
        if (!still()) return;
        if (res.data.error || !res.data.files) {
          fail((res.data.error && res.data.error.message) || JSON.stringify(res.data));
          return;
        }
        clear(host);
        for (const f of res.data.files) host.appendChild(exportFile(f));
        host.dataset.state = 'done';
      })
      .catch((e) => {
        if (still()) fail(e.message);
      });
}
function exportFile(f) {
  const url = URL.createObjectURL(new Blob([f.content], {type: 'text/plain'}));
  const name = el('span', {text: f.name + (f.executable ? ' (+x)' : '')});
  const link =
      el('a', {class: 'download', href: url, download: f.name, text: t('export.download')});
  return el(
      'section', {class: 'export-file', 'data-testid': 'export-file'},
      [el('header', {}, [name, link]), el('pre', {text: f.content})]);
}

// --- serving
// ----------------------------------------------------------------------------------------------------
async function runServing(gen, signal) {
  const read = readServingJob();
  if (read.error) {
    showError(t('status.error'), read.error);
    return;
  }
  setStatus(t('status.running'), 'busy');
  const started = performance.now();
  const res =
      await post('serving', {job: read.value, config: read.config, flags: {plan: true}}, {signal});
  if (stale(gen)) return;
  state.servingJob = read;
  if (res.data.error) {
    setStatus('', 'error');
    showError(t('status.error'), res.data.error);
    state.serving = null;
  } else {
    hideError();
    state.serving = res.data;
    if (res.status === 422) showInfeasible(res.data);
  }
  renderServing();
  setStatus(t('status.done', {ms: num(Math.round(performance.now() - started), 0)}), 'done');
}
function servingTip(r) {
  return [
    r.instance, t('tooltip.gpus', {n: r.gpus, gpu: r.gpu}) + ` · tp${r.tp} × ${r.replicas}`,
    `${t('col.ttft')}: ${fmtSec(r.ttft_s.p90)} · ${t('col.tpot')}: ${fmtSec(r.tpot_s.p90)}`,
    `${t('col.tput')}: ${fmtRate(r.output_tokens_per_s)} · ${
        fmtUsd(r.cost_per_million_output_tokens_usd)} / M`
  ].join('\n');
}
function renderServing() {
  const d = state.serving;
  const plans = (d && d.plans) || [];
  const s = (d && d.inputs && d.inputs.serving) || {};
  const mk = (key) => plans.map((r, i) => ({
                                  x: r.output_tokens_per_s_per_gpu,
                                  y: r[key].p90 * 1000,
                                  cls: 'serving-point',
                                  title: `${t('serving.point')} ${i + 1}: ${r.instance}`,
                                  tip: servingTip(r),
                                  attrs: {'data-testid': 'serving-point', 'data-index': i},
                                  onClick: () => selectServing(i)
                                }));
  scatterPlot($('serving-ttft'), {
    title: t('serving.ttft'),
    points: mk('ttft_s'),
    xLabel: t('serving.x'),
    yLabel: t('serving.ttft'),
    zero: true,
    width: 480,
    height: 320,
    hLines: s.ttft_p90_ms ?
        [{y: s.ttft_p90_ms, label: t('serving.sla', {v: num(s.ttft_p90_ms, 0) + ' ms'})}] :
        []
  });
  scatterPlot($('serving-tpot'), {
    title: t('serving.tpot'),
    points: mk('tpot_s'),
    xLabel: t('serving.x'),
    yLabel: t('serving.tpot'),
    zero: true,
    width: 480,
    height: 320,
    hLines: s.tpot_p90_ms ?
        [{y: s.tpot_p90_ms, label: t('serving.sla', {v: num(s.tpot_p90_ms, 0) + ' ms'})}] :
        []
  });
  const host = clear($('serving-plans'));
  clear($('serving-selected'));
  if (!plans.length) return;
  const head = [
    'col.rank', 'col.instance', 'col.gpu', 'col.gpus', 'col.layout', 'col.ttft', 'col.tpot',
    'col.tput', 'col.costm'
  ];
  const cells = (r, i) =>
      [i + 1, r.instance, r.gpu, r.gpus,
       `tp${r.tp} pp${r.pp} ×${r.replicas} · ${r.weights}/${r.kv_dtype}`, fmtSec(r.ttft_s.p90),
       fmtSec(r.tpot_s.p90), fmtRate(r.output_tokens_per_s),
       fmtUsd(r.cost_per_million_output_tokens_usd)];
  const rows = plans.map(
      (r, i) =>
          el('tr', {'data-index': i, onclick: () => selectServing(i)},
             cells(r, i).map((c) => el('td', {text: String(c)}))));
  const thead = el('thead', {}, el('tr', {}, head.map((h) => el('th', {text: t(h)}))));
  host.appendChild(el('table', {'data-testid': 'serving-table'}, [thead, el('tbody', {}, rows)]));
  selectServing(0);
}
function selectServing(i) {
  const r = state.serving.plans[i];
  document.querySelectorAll('#serving-plans tbody tr')
      .forEach((tr) => tr.classList.toggle('sel', Number(tr.dataset.index) === i));
  document.querySelectorAll('.for-serving circle')
      .forEach((c) => c.classList.toggle('selected-point', Number(c.dataset.index) === i));
  const host = clear($('serving-selected'));
  host.appendChild(factsList([
    [t('selected.instance'), `${r.instance} · ${t('tooltip.gpus', {n: r.gpus, gpu: r.gpu})}`],
    [t('col.ttft'), fmtSec(r.ttft_s.p90)], [t('col.tpot'), fmtSec(r.tpot_s.p90)],
    [t('col.tput'), fmtRate(r.output_tokens_per_s)],
    [t('col.costm'), fmtUsd(r.cost_per_million_output_tokens_usd)],
    ['KV cache', num(r.kv_cache_capacity_tokens, 0) + ' tokens'],
    [t('selected.bottleneck'), r.bottleneck]
  ]));
  host.appendChild(el('h3', {text: t('serving.launch')}));
  host.appendChild(
      el('pre', {class: 'launch', 'data-testid': 'serving-launch', text: r.launch_line}));
  host.appendChild(el('h3', {text: t('export.title')}));
  const formats = [r.engine, 'kubernetes'];
  const picker = el(
      'select', {id: 'serving-export-format', class: 'no-print', 'aria-label': t('export.format')},
      formats.map((f) => el('option', {value: f, text: f})));
  const files = el('div', {id: 'serving-export', 'data-testid': 'serving-export'});
  host.appendChild(picker);
  host.appendChild(files);
  const gen = state.gen;
  const load = () => showExport(
      files, servingExportParts(r, picker.value),
      () => gen === state.gen && state.servingSelected === i);
  state.servingSelected = i;
  picker.addEventListener('change', load);
  load();
}
// The selected serving setup as a pinned serving job: the editor's model and workload with the
// row's card, count, layout (replicas = data parallel) and precisions.
function servingExportParts(r, fmt) {
  const job = JSON.parse(JSON.stringify(state.servingJob.value));
  job.cluster = {gpu: r.gpu, num_gpus: r.gpus};
  job.parallel = {tp: r.tp, pp: r.pp, dp: r.replicas};
  job.serving = Object.assign(
      job.serving || {}, {engine: r.engine, weights: r.weights, kv_dtype: r.kv_dtype});
  return {
    job,
    config: state.servingJob.config,
    flags: {to: fmt, serving: true, instance: r.instance}
  };
}

// --- fleet
// --------------------------------------------------------------------------------------------------------
async function runFleet(gen, signal) {
  const f = parseJsonField('f-fleet', 'editor.fleet.bad');
  if (f.error || !f.value) {
    showError(t('status.error'), f.error || t('editor.fleet.bad', {msg: 'empty'}));
    return;
  }
  setStatus(t('status.running'), 'busy');
  const started = performance.now();
  const res = await post('fleet', {fleet: f.value}, {signal});
  if (stale(gen)) return;
  if (res.data.error) {
    setStatus('', 'error');
    showError(t('status.error'), res.data.error);
    state.fleet = null;
  } else {
    hideError();
    state.fleet = res.data;
  }
  renderFleet();
  setStatus(t('status.done', {ms: num(Math.round(performance.now() - started), 0)}), 'done');
}
function renderFleet() {
  const host = clear($('fleet'));
  const d = state.fleet;
  if (!d) return;
  const runs = [
    {title: t('fleet.aware') + (d.policy ? ` (${d.policy})` : ''), a: d.assignments || [], s: d}
  ];
  if (d.baseline)
    runs.push({title: t('fleet.baseline'), a: d.baseline.assignments || [], s: d.baseline});
  const horizon = Math.max(
      ...runs.map((r) => r.s.horizon_s || 0), ...runs.flatMap((r) => r.a.map((x) => x.end_s || 0)),
      1);
  const jobs = [...new Set(runs.flatMap((r) => r.a.map((x) => x.job)))];
  for (const r of runs) {
    host.appendChild(el('h3', {text: r.title}));
    host.appendChild(el('p', {
      class: 'desc',
      text: [
        t('fleet.util', {v: fmtPct(r.s.utilization)}), t('fleet.cost', {v: fmtUsd(r.s.cost_usd)}),
        t('fleet.avg', {v: fmtHours(r.s.avg_completion_s)})
      ].join(' · ')
    }));
    host.appendChild(gantt(r.a, horizon, jobs, r.title));
  }
  if ((d.missed || []).length)
    host.appendChild(el('p', {
      class: 'error',
      text: t('fleet.missed', {v: d.missed.map((m) => m.job || JSON.stringify(m)).join(', ')})
    }));
  for (const n of d.notes || []) host.appendChild(el('p', {class: 'desc', text: n}));
}
function gantt(assignments, horizon, jobs, title) {
  const W = 760, rowH = 24, gap = 8, m = {l: 120, r: 16, t: 8, b: 36};
  const H = m.t + assignments.length * (rowH + gap) + m.b;
  const X = (s) => m.l + (s / horizon) * (W - m.l - m.r);
  const svg =
      svgEl('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title}, svgTitle(title));
  const hoursMax = horizon / S_PER_HOUR;
  const axis = svgEl('g', {class: 'axis'});
  const grid = svgEl('g', {class: 'grid'});
  for (const h of linTicks(0, hoursMax)) {
    grid.appendChild(
        svgEl('line', {x1: X(h * S_PER_HOUR), x2: X(h * S_PER_HOUR), y1: m.t, y2: H - m.b}));
    axis.appendChild(svgEl(
        'text',
        {x: X(h * S_PER_HOUR), y: H - m.b + 14, 'text-anchor': 'middle', text: tickText(h)}));
  }
  axis.appendChild(svgEl('text', {
    class: 'axis-label',
    x: (m.l + W - m.r) / 2,
    y: H - 6,
    'text-anchor': 'middle',
    text: t('fleet.hours')
  }));
  svg.appendChild(grid);
  svg.appendChild(axis);
  assignments.forEach((a, i) => {
    const y = m.t + i * (rowH + gap);
    const cards = (a.gpus || []).map((g) => `${g.count} × ${g.pool}`).join(' + ');
    const tip =
        [
          `${a.job} (${a.kind})`, cards, a.layout, `${fmtHours(a.start_s)} → ${fmtHours(a.end_s)}`,
          fmtUsd(a.cost_usd),
          t(a.deadline_met === false ? 'fleet.deadline_missed' : 'fleet.deadline_met'), a.note
        ].filter(Boolean)
            .join('\n');
    svg.appendChild(
        svgEl('text', {x: m.l - 8, y: y + rowH / 2 + 4, 'text-anchor': 'end', text: a.job}));
    const rect = svgEl(
        'rect', {
          class: 'fleet-bar',
          'data-testid': 'fleet-bar',
          x: X(a.start_s || 0),
          y,
          rx: 3,
          width: Math.max(1, X(a.end_s || 0) - X(a.start_s || 0)),
          height: rowH,
          fill: COLORS[jobs.indexOf(a.job) % COLORS.length],
          stroke: a.deadline_met === false ? 'var(--bad)' : 'none',
          'stroke-width': 2
        },
        svgTitle(tip));
    rect.addEventListener('mousemove', (ev) => showTip(ev, tip));
    rect.addEventListener('mouseleave', hideTip);
    svg.appendChild(rect);
    svg.appendChild(svgEl('text', {
      x: X(a.start_s || 0) + 6,
      y: y + rowH / 2 + 4,
      fill: '#fff',
      style: 'fill:#fff',
      text: cards
    }));
  });
  return svg;
}

// --- start-up
// ---------------------------------------------------------------------------------------------------------
const EXAMPLE_POOL = {
  pool: 'h800-h20',
  groups: [
    {
      name: 'h800',
      gpu: 'h800-80gb',
      nodes: 2,
      gpus_per_node: 8,
      network: 'ib-ndr',
      price_per_gpu_hour: 2.0
    },
    {
      name: 'h20',
      gpu: 'h20-96gb',
      nodes: 2,
      gpus_per_node: 8,
      network: 'ib-ndr',
      price_per_gpu_hour: 0.9
    }
  ]
};
const EXAMPLE_FLEET = {
  pool: {
    pool: 'lab-mixed',
    groups: [
      {
        name: 'a100',
        gpu: 'a100-sxm-80gb',
        nodes: 2,
        gpus_per_node: 8,
        network: 'ib-hdr',
        price_per_gpu_hour: 1.1
      },
      {
        name: 'v100',
        gpu: 'v100-sxm-32gb',
        nodes: 2,
        gpus_per_node: 8,
        network: {kind: 'tcp', gbps: 25},
        price_per_gpu_hour: 0.35
      },
      {
        name: 'rtx4090',
        gpu: 'rtx4090-24gb',
        nodes: 2,
        gpus_per_node: 8,
        network: {kind: 'tcp', gbps: 25},
        price_per_gpu_hour: 0.3
      },
      {
        name: 'rtx3090',
        gpu: 'rtx3090-24gb',
        nodes: 2,
        gpus_per_node: 8,
        network: {kind: 'tcp', gbps: 25},
        price_per_gpu_hour: 0.2
      }
    ]
  },
  jobs: [
    {
      name: 'chat',
      kind: 'serving',
      model: {preset: 'llama-3-8b'},
      serving: {
        engine: 'vllm',
        input_len: 1000,
        output_len: 200,
        request_rate: 4,
        ttft_p90_ms: 1000,
        tpot_p90_ms: 60
      }
    },
    {
      name: 'finetune',
      kind: 'training',
      deadline_hours: 12,
      model: {preset: 'llama-3-8b'},
      training: {method: 'lora', seq_len: 2048, global_batch: 64, tokens: 3e8}
    },
    {
      name: 'pretrain',
      kind: 'training',
      priority: 1,
      model: {preset: 'gpt-neo-1.3b'},
      training: {method: 'pretrain', seq_len: 2048, global_batch: 256, tokens: 2.6e10}
    }
  ]
};

function setMode(mode) {
  state.mode = mode;
  document.body.dataset.mode = mode;
  hideError();
  schedule();
}
async function loadLists() {
  try {
    const models = await getJson('/api/models');
    state.models = Array.isArray(models) ? models : (models.models || []);
    const sel = $('f-preset');
    for (const m of state.models)
      sel.appendChild(
          el('option', {value: m.preset, title: m.params, text: `${m.preset} (${m.active})`}));
    if (state.models.some((m) => m.preset === 'llama-3-8b')) sel.value = 'llama-3-8b';
  } catch (e) {
    showError(t('status.network', {msg: e.message}));
  }
  try {
    const inst = await getJson('/api/catalog/instances');
    const rows = Array.isArray(inst) ? inst : (inst.rows || []);
    const providers = [...new Set(rows.map((r) => r.provider).filter(Boolean))].sort();
    const box = $('f-clouds');
    for (const p of providers)
      box.appendChild(
          el('label', {}, [el('input', {type: 'checkbox', value: p, name: 'cloud'}), p]));
  } catch (e) { /* the clouds list is optional: the job still runs over every cloud */
  }
  try {
    const gpus = await getJson('/api/catalog/gpus');
    const rows = Array.isArray(gpus) ? gpus : (gpus.rows || []);
    const sel = $('f-gpus');
    for (const g of rows)
      sel.appendChild(
          el('option', {value: g.id, title: g.name, text: `${g.id} (${g.memory_GiB} GiB)`}));
  } catch (e) { /* the GPU list is optional too */
  }
}
function init() {
  const saved = localStorage.getItem(LANG_KEY);
  state.lang = saved === 'zh' || saved === 'en'   ? saved :
      (navigator.language || '').startsWith('zh') ? 'zh' :
                                                    'en';
  document.body.dataset.mode = state.mode;
  $('f-pool').value = JSON.stringify(EXAMPLE_POOL, null, 2);
  $('f-fleet').value = JSON.stringify(EXAMPLE_FLEET, null, 2);
  applyLanguage();
  $('lang-toggle').addEventListener('click', () => {
    state.lang = state.lang === 'zh' ? 'en' : 'zh';
    localStorage.setItem(LANG_KEY, state.lang);
    applyLanguage();
    rerender();
  });
  const form = $('editor');
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run();
  });
  form.addEventListener('input', (ev) => {
    if (ev.target.name !== 'mode') schedule();
  });
  form.addEventListener('change', (ev) => {
    if (ev.target.name === 'mode')
      setMode(ev.target.value);
    else
      schedule();
  });
  $('export-format').addEventListener('change', () => {
    if (!state.selected || state.poolMode) return;
    const {kind, i} = state.selected;
    const row = (kind === 'pareto' ? state.plan.pareto : state.plan.plans)[i];
    const gen = state.gen;
    loadExport(
        row, $('export-format').value,
        () => gen === state.gen && state.selected && state.selected.kind === kind &&
            state.selected.i === i);
  });
  setStatus(t('status.idle'), '');
  loadLists().then(run);
}
// Redraws what is on screen in the new language from the JSON already held (no new request).
function rerender() {
  if (state.mode === 'training' && state.plan) {
    const sel = state.selected;
    renderTraining();
    if (sel) selectSetup(sel.kind, sel.i);
  } else if (state.mode === 'serving' && state.serving)
    renderServing();
  else if (state.mode === 'fleet' && state.fleet)
    renderFleet();
}
if (document.readyState === 'loading')
  document.addEventListener('DOMContentLoaded', init);
else
  init();
})();
