import { z } from 'zod';
import { EpisodeDb, loadBaseDb, TAU2_DOMAINS, type BaseTables, type DomainModel, type Tau2Domain } from './db.js';
import { TAU2_RELEASES, type Tau2Release } from './tasks.js';
import { airlineTools } from './tools/airline.js';
import { airlineModel } from './tools/airline-records.js';
import type { DomainTool } from './tools/common.js';
import { retailTools } from './tools/retail.js';
import { retailModel } from './tools/retail-records.js';

/** A domain's data model and its agent tools for one task release. */
export interface DomainSpec {
  readonly domain: Tau2Domain;
  readonly release: Tau2Release;
  readonly model: DomainModel;
  readonly tools: readonly DomainTool[];
}

/** The tools the agent gets: the 2025-06-10 retail release predates `get_item_details`. */
export function domainSpec(domain: Tau2Domain, release: Tau2Release = 'current'): DomainSpec {
  if (domain === 'airline') return { domain, release, model: airlineModel, tools: airlineTools };
  const tools = release === 'current' ? retailTools : retailTools.filter((t) => t.name !== 'get_item_details');
  return { domain, release, model: retailModel, tools };
}

/** A fresh episode database over the domain's shared base. */
export async function newEpisodeDb(spec: DomainSpec, dataDir: string): Promise<EpisodeDb> {
  return new EpisodeDb(spec.model, await loadBaseDb(spec.model, dataDir));
}

/** Base database for a spec (loaded once per process). */
export function baseDb(spec: DomainSpec, dataDir: string): Promise<BaseTables> {
  return loadBaseDb(spec.model, dataDir);
}

/**
 * Recipe options every tau2 component reads: `domain` (required) and `release` (default
 * `current`). Each component extends it with its own keys.
 */
export const Tau2OptionsSchema = z.strictObject({
  domain: z.enum(TAU2_DOMAINS).describe('The tau2 domain.'),
  release: z
    .enum(TAU2_RELEASES)
    .default('current')
    .describe('Task release: current (with the τ³ fixes) or 2025-06-10.'),
});
export type Tau2Options = z.infer<typeof Tau2OptionsSchema>;
