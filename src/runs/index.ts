/** Run directories: versioning, manifest, metrics, trajectories, checkpoints, resume. */
export { createRunDir, openRunDir, RunDir, stepName, CHECKPOINT_MARKER, type CreateRunOptions } from './run-dir.js';
export { buildManifest, atkVersion, sha256, type Manifest, type ManifestFacts, type RunStatus } from './manifest.js';
export { readMetricsFile, readMetricsTail, type MetricsLine } from './metrics.js';
export { trajectoryStepsToDelete, type TrajectoryRetention } from './retention.js';
export { listRuns, overview, findRun, processGone, type RunOverview } from './list.js';
export { allocateVersion, listVersions, updateLatest, readLatest, formatVersion } from './versions.js';
export { writeFileAtomic, writeJsonAtomic } from './atomic.js';
export { lockRunDir, LOCK_FILE, type LockHolder, type LockOptions, type RunLock } from './run-lock.js';
