/** The live dashboard of `atk run` and `atk eval`, and its plain-line fallback. */
export { renderRunEvents, wantsTui, type RenderOptions } from './render-run-events.js';
export { Dashboard, type DashboardProps } from './dashboard.js';
export { initialDashboard, reduceDashboard, progressFraction, etaSeconds, type DashboardState } from './state.js';
export { sparkline, progressBar, formatSeconds } from './glyphs.js';
