/** The report's whole stylesheet, inlined so that the HTML file stands alone. */
export const REPORT_CSS = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1200px; color: #1f2937; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #e5e7eb; } h3 { font-size: 15px; margin-bottom: 2px; }
.meta { color: #6b7280; font-size: 12px; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; } figure { margin: 0; }
svg.plot { background: #fff; border: 1px solid #e5e7eb; border-radius: 4px; }
.plot-title { font-size: 13px; font-weight: 600; fill: #111827; } .tick, .axis-label, .legend { font-size: 11px; fill: #4b5563; }
.grid { stroke: #f0f0f0; } .frame { fill: none; stroke: #d1d5db; } .empty { fill: #9ca3af; font-size: 13px; }
table.figures { border-collapse: collapse; margin: 8px 16px 8px 0; } table.figures th, table.figures td { border: 1px solid #e5e7eb; padding: 3px 10px; text-align: right; }
table.figures th:first-child { text-align: left; } table.figures tr.examples td { text-align: left; color: #6b7280; font-size: 12px; } .up { color: #059669; } .down { color: #dc2626; }
.tables { display: flex; flex-wrap: wrap; align-items: flex-start; }
.sample { border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 14px; margin: 12px 0; }
.turn { margin: 6px 0; padding-left: 10px; border-left: 3px solid #d1d5db; } .turn .role { font-size: 11px; text-transform: uppercase; color: #6b7280; }
.turn.assistant { border-color: #2563eb; } .turn.system { border-color: #7c3aed; } .turn.user { border-color: #059669; }
pre { white-space: pre-wrap; margin: 2px 0; font: 12.5px/1.4 ui-monospace, Menlo, monospace; } pre.reasoning { color: #6b7280; font-style: italic; }
pre.call { color: #0369a1; } pre.result { color: #92400e; } pre.result.error { color: #dc2626; }
`;
