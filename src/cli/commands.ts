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

/** Every command, one module per verb. */
export const commands: readonly CommandModule[] = [
  runCommand,
  exportCommand,
  dataCommand,
  modelCommand,
  validateCommand,
  explainCommand,
  initCommand,
  schemaCommand,
  runsCommand,
  doctorCommand,
  setupCommand,
  inspectTrajectoryCommand,
  reportCommand,
  evalCommand,
  viewCommand,
  launchCommand,
];
