import { z } from 'zod';
import {
  baseDb,
  domainSpec,
  EpisodeDb,
  strandsTools,
  TAU2_DB_KEY,
  Tau2EnvOptionsSchema,
} from '../domains/tau2/index.js';
import { parseComponentOptions } from '../util/component-options.js';
import { dataDir } from '../util/paths.js';
import type { EpisodeTools, ToolDefinition } from './types.js';

/** Options of the `tau2` tools: the domain and release, and `only`, names of the domain's tools the agent gets. */
const Tau2ToolOptions = Tau2EnvOptionsSchema.extend({
  only: z.array(z.string()).optional().describe("Names of the domain's tools the agent gets (default: all)."),
}).superRefine(({ domain, release, only }, ctx) => {
  const names = domainSpec(domain, release).tools.map((t) => t.name);
  const unknown = (only ?? []).filter((n) => !names.includes(n));
  if (unknown.length > 0)
    ctx.addIssue({
      code: 'custom',
      path: ['only'],
      message: `unknown tool ${unknown.join(', ')}; the domain has ${names.join(', ')}`,
    });
});

/**
 * The agent tools of a tau2 domain (options `domain`, `release`, and `only`: a list of tool names the
 * agent gets, for models whose context cannot hold all of them). The shared database is loaded
 * once per run; each episode gets its own copy-on-write copy, stored in `env.state` under
 * `tau2.db` for the `tau2` reward, and tools bound to it.
 */
export const tau2Tools: ToolDefinition = {
  name: 'tau2',
  options: Tau2ToolOptions,
  async create(options): Promise<EpisodeTools> {
    const { domain, release, only } = parseComponentOptions(Tau2ToolOptions, options, 'tools.tau2.options');
    const spec = domainSpec(domain, release);
    const tools = only ? spec.tools.filter((t) => only.includes(t.name)) : spec.tools;
    const base = await baseDb(spec, dataDir());
    return (env) => {
      const db = new EpisodeDb(spec.model, base);
      env.state.set(TAU2_DB_KEY, db);
      return strandsTools(tools, db);
    };
  },
};
