/** Launching vLLM/SGLang servers: command lines, process groups, readiness, replicas, versions. */
export {
  engineCommand,
  servedWeightDtype,
  vllmLoraRank,
  VLLM_LORA_RANKS,
  type EngineCommand,
  type EngineLaunchSpec,
} from './engine-command.js';
export {
  launchEngineProcess,
  logTail,
  withLogTail,
  EngineStartError,
  type EngineProcess,
  type EngineStartProgress,
  type LaunchEngineOptions,
} from './engine-process.js';
export {
  launchEngines,
  replicaGpus,
  type LaunchEnginesOptions,
  type LaunchedEngines,
  type ReplicaPlace,
} from './launch-engines.js';
export {
  ENGINE_VERSION_RANGES,
  compareVersions,
  installedEngineVersion,
  judgeEngineVersion,
  runningEngineVersion,
  type VersionVerdict,
} from './engine-version.js';
export { engineVersionCheck, engineVersionChecks, type EngineDoctorRow } from './engine-doctor.js';
export { installedVllm, vllmExecutable, vllmVenvDir, VLLM_SETUP_STAMP, type VllmInstall } from './vllm-venv.js';
