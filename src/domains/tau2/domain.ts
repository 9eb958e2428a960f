import { ConfigError } from '../../errors/index.js';
import { EpisodeDb, loadBaseDb, TAU2_DOMAINS, type BaseTables, type DomainModel, type Tau2Domain } from './db.js';
import { TAU2_RELEASES, type Tau2Release } from './tasks.js';
import { airlineModel, airlineTools } from './tools/airline.js';
import type { DomainTool } from './tools/common.js';
import { retailModel, retailTools } from './tools/retail.js';

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

/** Recipe options every tau2 component reads: `domain` and `release`. */
export interface Tau2Options {
  readonly domain: Tau2Domain;
  readonly release: Tau2Release;
}

/**
 * Read `domain` (required) and `release` (default `current`) from component options.
 * @throws ConfigError naming the option path when either is invalid.
 */
export function parseTau2Options(options: Readonly<Record<string, unknown>>, where: string): Tau2Options {
  const domain = options.domain;
  const release = options.release ?? 'current';
  const issues = [];
  if (typeof domain !== 'string' || !(TAU2_DOMAINS as readonly string[]).includes(domain)) {
    issues.push({ file: '<recipe>', line: 1, col: 1, path: `${where}.domain`, message: `expected one of ${TAU2_DOMAINS.join(', ')}, got ${JSON.stringify(domain)}` });
  }
  if (typeof release !== 'string' || !(TAU2_RELEASES as readonly string[]).includes(release)) {
    issues.push({ file: '<recipe>', line: 1, col: 1, path: `${where}.release`, message: `expected one of ${TAU2_RELEASES.join(', ')}, got ${JSON.stringify(release)}` });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return { domain: domain as Tau2Domain, release: release as Tau2Release };
}
