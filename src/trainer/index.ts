/**
 * The bundled Python trainer as TypeScript sees it: find a Python that can import torch, start
 * `python -m atk_trainer` on loopback, drive its control API, and read its engine URL.
 */
export { findPython, findTorchPython, pythonCandidates, type PythonInfo } from './find-python.js';
export { launchTrainer, type LaunchTrainerOptions, type TrainerProcess } from './launch.js';
export {
  createTrainerClient,
  type TrainerClient,
  type TrainerClientOptions,
  type TrainBatchInput,
  type TrainSequence,
  type LoadModelRequest,
  type LoadModelResponse,
  type CheckpointResponse,
  type HealthResponse,
} from './client.js';
export { trainConfigFromRecipe, type TrainConfigInput, type TrainConfigContext } from './train-config.js';
export { lastExceptionLine, trainerErrorFromLog } from './traceback.js';
export { MODEL_FILES, mergeLoraAdapter } from './merge-lora.js';
