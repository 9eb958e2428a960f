import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { InputError } from '../../errors/index.js';
import type { Tau2Domain } from './db.js';

/** Which task files: `current` = the repository head (τ³ fixes), `2025-06-10` = the original tau2 release. */
export type Tau2Release = 'current' | '2025-06-10';
export const TAU2_RELEASES: readonly Tau2Release[] = ['current', '2025-06-10'];

export type RewardBasisPart = 'DB' | 'COMMUNICATE' | 'ACTION' | 'ENV_ASSERTION' | 'NL_ASSERTION';

const ActionSchema = z.looseObject({
  action_id: z.string(),
  requestor: z.enum(['assistant', 'user']).default('assistant'),
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  info: z.string().nullish(),
  compare_args: z.array(z.string()).nullish(),
});

const StructuredInstructions = z.looseObject({
  domain: z.string(),
  reason_for_call: z.string(),
  known_info: z.string().nullish(),
  unknown_info: z.string().nullish(),
  task_instructions: z.string(),
});

const TaskSchema = z.looseObject({
  id: z.string(),
  user_scenario: z.looseObject({
    persona: z.string().nullish(),
    instructions: z.union([z.string(), StructuredInstructions]),
  }),
  initial_state: z.unknown().nullish(),
  evaluation_criteria: z
    .looseObject({
      actions: z.array(ActionSchema).nullish(),
      env_assertions: z
        .array(
          z.looseObject({
            env_type: z.string(),
            func_name: z.string(),
            arguments: z.record(z.string(), z.unknown()),
            assert_value: z.boolean().default(true),
          }),
        )
        .nullish(),
      communicate_info: z.array(z.string()).nullish(),
      nl_assertions: z.array(z.string()).nullish(),
      reward_basis: z
        .array(z.enum(['DB', 'COMMUNICATE', 'ACTION', 'ENV_ASSERTION', 'NL_ASSERTION']))
        .default(['DB', 'COMMUNICATE']),
    })
    .nullish(),
});

/** One tau2 task as the data files hold it (reward_basis defaulted to [DB, COMMUNICATE] as the reference does). */
export type Tau2Task = z.infer<typeof TaskSchema>;
export type Tau2Action = z.infer<typeof ActionSchema>;

const cache = new Map<string, Promise<Tau2Task[]>>();

/**
 * The tasks of one domain and release, filtered to a split of `split_tasks.json` (`train`,
 * `test`, `base`), or all of them for `all`. Files are read once per process.
 * @throws InputError on a missing file, a malformed task or an unknown split.
 */
export async function loadTau2Tasks(
  dataDir: string,
  domain: Tau2Domain,
  release: Tau2Release,
  split: string,
): Promise<Tau2Task[]> {
  const root = join(dataDir, 'tau2');
  const tasksPath =
    release === 'current'
      ? join(root, 'domains', domain, 'tasks.json')
      : join(root, `release_${release}`, 'domains', domain, 'tasks.json');
  let pending = cache.get(tasksPath);
  if (!pending) {
    pending = readTasks(tasksPath);
    pending.catch(() => cache.delete(tasksPath));
    cache.set(tasksPath, pending);
  }
  const tasks = await pending;
  if (split === 'all') return tasks;
  const splits = z
    .record(z.string(), z.array(z.string()))
    .parse(await readJson(join(root, 'domains', domain, 'split_tasks.json')));
  const ids = splits[split];
  if (!ids)
    throw new InputError(`tau2 ${domain} has no split '${split}'`, {
      hint: `use one of: ${[...Object.keys(splits), 'all'].join(', ')}`,
    });
  const wanted = new Set(ids);
  return tasks.filter((t) => wanted.has(t.id));
}

async function readTasks(path: string): Promise<Tau2Task[]> {
  const parsed = z.array(TaskSchema).safeParse(await readJson(path));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`${path}: task ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}

async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new InputError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`, {
      hint: 'set ATK_DATA_DIR to the folder holding tau2/',
      cause: error,
    });
  }
}
