import { basename, extname } from 'node:path';
import type { RewardComponentConfig, RewardConfig } from '../recipe/schema.js';

/** One reward of the recipe as the registry sees it. */
export interface RewardComponent {
  /** Name the component's score is logged under in a weighted sum. */
  readonly label: string;
  /** Registered reward name. */
  readonly name: string;
  readonly weight: number;
  readonly options: Readonly<Record<string, unknown>>;
  /** Recipe key of this component, e.g. `reward` or `reward.components.1`. */
  readonly path: string;
  /** Recipe key `options` were written under: `<path>.options`, `<path>.judge`, or `<path>` for module and command keys. */
  readonly optionsPath: string;
}

type RewardSource = Pick<
  RewardComponentConfig,
  'name' | 'options' | 'module' | 'export' | 'command' | 'cwd' | 'timeout_s' | 'judge'
> & { readonly label?: string };

/**
 * The recipe's rewards as registered components, so module, command and judge rewards go through
 * the same registry as built-ins: `{module, export}` is reward `module`, `{command}` is `command`,
 * `{judge}` is `judge`. Labels default to the reward name, the module export, `command` or
 * `judge`; repeated labels get `_2`, `_3`, ...
 */
export function rewardComponents(config: RewardConfig): RewardComponent[] {
  const entries: { source: RewardSource; weight: number; path: string }[] = config.components
    ? config.components.map((c, i) => ({ source: c, weight: c.weight, path: `reward.components.${i}` }))
    : config.name || config.module || config.command || config.judge
      ? [{ source: config, weight: 1, path: 'reward' }]
      : [];
  const seen = new Map<string, number>();
  return entries.map(({ source, weight, path }) => {
    const { name, options, label, optionsKey } = registered(source);
    const count = (seen.get(label) ?? 0) + 1;
    seen.set(label, count);
    return {
      label: count === 1 ? label : `${label}_${count}`,
      name,
      weight,
      options,
      path,
      optionsPath: optionsKey ? `${path}.${optionsKey}` : path,
    };
  });
}

function registered(source: RewardSource): {
  name: string;
  options: Readonly<Record<string, unknown>>;
  label: string;
  optionsKey: string;
} {
  if (source.module !== undefined) {
    const options = {
      module: source.module,
      ...(source.export ? { export: source.export } : {}),
      options: source.options,
    };
    return {
      name: 'module',
      options,
      label: source.label ?? source.export ?? basename(source.module, extname(source.module)),
      optionsKey: '',
    };
  }
  if (source.command !== undefined) {
    const options = {
      command: source.command,
      timeout_s: source.timeout_s,
      ...(source.cwd === undefined ? {} : { cwd: source.cwd }),
    };
    return { name: 'command', options, label: source.label ?? 'command', optionsKey: '' };
  }
  if (source.judge !== undefined)
    return { name: 'judge', options: source.judge, label: source.label ?? 'judge', optionsKey: 'judge' };
  return {
    name: source.name ?? '',
    options: source.options,
    label: source.label ?? source.name ?? '',
    optionsKey: 'options',
  };
}
