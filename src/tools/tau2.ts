import { baseDb, domainSpec, EpisodeDb, parseTau2Options, strandsTools, TAU2_DB_KEY } from '../domains/tau2/index.js';
import { dataDir } from '../util/paths.js';
import type { EpisodeTools, ToolDefinition } from './types.js';

/**
 * The agent tools of a tau2 domain (options `domain`, `release`). The shared database is loaded
 * once per run; each episode gets its own copy-on-write copy, stored in `env.state` under
 * `tau2.db` for the `tau2` reward, and tools bound to it.
 */
export const tau2Tools: ToolDefinition = {
  name: 'tau2',
  async create(options): Promise<EpisodeTools> {
    const { domain, release } = parseTau2Options(options, 'tools.tau2.options');
    const spec = domainSpec(domain, release);
    const base = await baseDb(spec, dataDir());
    return (env) => {
      const db = new EpisodeDb(spec.model, base);
      env.state.set(TAU2_DB_KEY, db);
      return strandsTools(spec.tools, db);
    };
  },
};
