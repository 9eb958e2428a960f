import type { CommandModule } from 'yargs';
import { dataCommand } from './data.js';
import { doctorCommand } from './doctor.js';
import { evalCommand } from './eval.js';
import { exportCommand } from './export.js';
import { explainCommand } from './explain.js';
import { initCommand } from './init.js';
import { launchCommand } from './launch.js';
import { modelCommand } from './model.js';
import { inspectTrajectoryCommand } from './inspect-trajectory.js';
import { reportCommand } from './report.js';
import { runCommand } from './run.js';
import { runsCommand } from './runs.js';
import { schemaCommand } from './schema.js';
import { setupCommand } from './setup.js';
import { validateCommand } from './validate.js';
import { viewCommand } from './view.js';

/** Every command, one module per verb, in the order `atk --help` lists them: the workflow first, then the rest. */
export const commands: readonly CommandModule[] = [
  initCommand,
  validateCommand,
  explainCommand,
  runCommand,
  viewCommand,
  evalCommand,
  exportCommand,
  inspectTrajectoryCommand,
  reportCommand,
  runsCommand,
  dataCommand,
  modelCommand,
  launchCommand,
  doctorCommand,
  setupCommand,
  schemaCommand,
];
