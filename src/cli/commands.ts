import type { CommandModule } from 'yargs';
import { dataCommand } from './data.js';

/** Every command, one module per verb. */
export const commands: CommandModule<object, any>[] = [dataCommand];
