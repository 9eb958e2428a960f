import { baseDb, domainSpec, EpisodeDb, parseTau2Options, strandsTools, TAU2_DB_KEY, type DomainTool } from '../domains/tau2/index.js';
import { ConfigError } from '../errors/index.js';
import { dataDir } from '../util/paths.js';
import type { EpisodeTools, ToolDefinition } from './types.js';

/**
 * The agent tools of a tau2 domain (options `domain`, `release`, and `only`: a list of tool names the
 * agent gets, for models whose context cannot hold all of them). The shared database is loaded
 * once per run; each episode gets its own copy-on-write copy, stored in `env.state` under
 * `tau2.db` for the `tau2` reward, and tools bound to it.
 */
export const tau2Tools: ToolDefinition = {
  name: 'tau2',
  async create(options): Promise<EpisodeTools> {
    const { domain, release } = parseTau2Options(options, 'tools.tau2.options');
    const spec = domainSpec(domain, release);
    const tools = onlyTools(spec.tools, options.only);
    const base = await baseDb(spec, dataDir());
    return (env) => {
      const db = new EpisodeDb(spec.model, base);
      env.state.set(TAU2_DB_KEY, db);
      return strandsTools(tools, db);
    };
  },
};

/** The tools named by `only` (all when absent). @throws ConfigError for a name the domain does not have. */
function onlyTools(tools: readonly DomainTool[], only: unknown): readonly DomainTool[] {
  if (only === undefined) return tools;
  const names = tools.map((t) => t.name);
  const issue = (message: string): ConfigError => new ConfigError([{ file: '<recipe>', line: 1, col: 1, path: 'tools.tau2.options.only', message }]);
  if (!Array.isArray(only) || !only.every((n) => typeof n === 'string')) throw issue('expected a list of tool names');
  const unknown = only.filter((n) => !names.includes(n));
  if (unknown.length > 0) throw issue(`unknown tool ${unknown.join(', ')}; the domain has ${names.join(', ')}`);
  return tools.filter((t) => only.includes(t.name));
}
