/**
 * The HTML shell of `atk view`: the stylesheet, an import map that names uPlot, and the app's entry
 * module. Everything else the page shows is drawn by the modules in dist/viewer from the JSON API.
 */
export function viewerPage(): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>atk view</title>
<link rel="stylesheet" href="/vendor/uplot.css">
<style>${VIEWER_CSS}</style>
<script type="importmap">{"imports": {"uplot": "/vendor/uplot.js"}}</script>
<script type="module" src="/app/main.js"></script>
</head><body>
<header><a href="#/runs" class="brand">atk view</a><nav id="crumbs"></nav><span id="live" title="server-sent events from the run directories"></span></header>
<main id="main" data-state="loading"><p class="dim">loading…</p></main>
</body></html>
`;
}

const VIEWER_CSS = `
:root { --fg: #1f2937; --dim: #6b7280; --line: #e5e7eb; --accent: #2563eb; --bad: #dc2626; --good: #059669; --warn: #d97706; }
* { box-sizing: border-box; }
body { font: 13px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: var(--fg); background: #fafafa; }
header { display: flex; align-items: center; gap: 16px; padding: 8px 16px; background: #111827; color: #e5e7eb; position: sticky; top: 0; z-index: 5; }
header a { color: #e5e7eb; text-decoration: none; } .brand { font-weight: 700; }
#crumbs a, #crumbs span { margin-right: 6px; color: #9ca3af; } #crumbs a:hover { color: #fff; }
#live { margin-left: auto; font-size: 12px; color: #9ca3af; } #live.on::before { content: "● "; color: #10b981; }
main { padding: 12px 16px; max-width: 1500px; margin: 0 auto; }
h1 { font-size: 18px; margin: 4px 0 10px; } h2 { font-size: 15px; margin: 18px 0 6px; }
.dim { color: var(--dim); } .bad { color: var(--bad); } .good { color: var(--good); } .warn { color: var(--warn); }
a { color: var(--accent); }
table.grid { border-collapse: collapse; background: #fff; width: 100%; }
table.grid th, table.grid td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; white-space: nowrap; }
table.grid td.text { white-space: normal; max-width: 520px; font-family: ui-monospace, Menlo, monospace; font-size: 12px; }
table.grid th { background: #f3f4f6; font-weight: 600; position: sticky; top: 40px; cursor: default; }
table.grid th.sortable { cursor: pointer; } table.grid tr.clickable:hover td { background: #eff6ff; cursor: pointer; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.toolbar { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.toolbar label { display: inline-flex; gap: 4px; align-items: center; }
input, select, button { font: inherit; padding: 3px 6px; border: 1px solid #d1d5db; border-radius: 4px; background: #fff; }
button { cursor: pointer; } button.primary { background: var(--accent); color: #fff; border-color: var(--accent); } button:disabled { opacity: 0.5; cursor: default; }
input[type=number] { width: 80px; }
.status { padding: 1px 6px; border-radius: 8px; font-size: 11px; background: #e5e7eb; } .status.running { background: #dbeafe; } .status.finished { background: #d1fae5; }
.status.failed, .status.stale { background: #fee2e2; } .status.interrupted { background: #fef3c7; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(460px, 1fr)); gap: 12px; }
.chart { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 6px; }
.chart h3 { font-size: 13px; margin: 0 0 4px; } .chart .u-legend tr.raw { display: none; } .chart .u-legend { font-size: 12px; }
.turn { margin: 6px 0; padding: 4px 10px; border-left: 3px solid #d1d5db; background: #fff; }
.turn .role { font-size: 11px; text-transform: uppercase; color: var(--dim); }
.turn.assistant { border-color: var(--accent); } .turn.system { border-color: #7c3aed; } .turn.user { border-color: var(--good); }
pre { white-space: pre-wrap; margin: 2px 0; font: 12px/1.4 ui-monospace, Menlo, monospace; }
pre.call { color: #0369a1; } pre.result { color: #92400e; } pre.result.error { color: var(--bad); } pre.reasoning { color: var(--dim); font-style: italic; }
.facts { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 6px 0; } .facts b { font-weight: 600; }
.tokens { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px; font: 12px/1.9 ui-monospace, Menlo, monospace; white-space: pre-wrap; word-break: break-all; }
.episode-segment-head { font: bold 12px system-ui, sans-serif; color: #b45309; border-top: 2px solid #f59e0b; margin-top: 10px; padding-top: 3px; } .segment { margin: 4px 0 8px; } .segment-head { font: 11px system-ui, sans-serif; color: #7c3aed; border-top: 1px dashed #c4b5fd; padding-top: 2px; }
.tok { border-radius: 2px; } .tok.env { color: #9ca3af; } .tok.model { outline: 1px solid rgba(0,0,0,0.06); }
.tok.drift { box-shadow: inset 0 -2px 0 var(--bad); } .tok:hover { outline: 2px solid #111827; }
#tok-hover { position: fixed; pointer-events: none; background: #111827; color: #f9fafb; padding: 4px 8px; border-radius: 4px; font: 12px ui-monospace, monospace; z-index: 10; white-space: pre; }
.legend-bar { display: inline-block; width: 160px; height: 10px; background: linear-gradient(to right, hsl(0,75%,70%), hsl(60,75%,70%), hsl(120,60%,75%)); vertical-align: middle; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.side-by-side { display: grid; grid-auto-flow: column; grid-auto-columns: minmax(280px, 1fr); gap: 8px; overflow-x: auto; }
.pager { display: flex; gap: 8px; align-items: center; margin: 8px 0; }
`;
