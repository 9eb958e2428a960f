import type { CommandModule } from 'yargs';

/** Every command, one module per verb. */
export const commands: CommandModule<object, any>[] = [];
