import type { CommandModule } from 'yargs';
import { dataCommand } from './data.js';
import { doctorCommand } from './doctor.js';
import { evalCommand } from './eval.js';
import { exportCommand } from './export.js';
import { initCommand } from './init.js';
import { launchCommand } from './launch.js';
import { inspectTrajectoryCommand } from './inspect-trajectory.js';
import { reportCommand } from './report.js';
import { runCommand } from './run.js';
import { runsCommand } from './runs.js';
import { schemaCommand } from './schema.js';
import { setupCommand } from './setup.js';
import { validateCommand } from './validate.js';
import { viewCommand } from './view.js';

/** Every command, one module per verb. */
// biome-ignore lint/suspicious/noExplicitAny: each command has its own argument type; yargs takes them as one list
export const commands: CommandModule<object, any>[] = [
  runCommand,
  exportCommand,
  dataCommand,
  validateCommand,
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
