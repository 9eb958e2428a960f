/**
 * The teacher of on-policy distillation (`algorithm.name: distill`): a second model, served beside the
 * policy and never trained, that scores the tokens the student samples. Its engine starts as every fixed
 * model's does (fixed-model.ts): embedded (a second trainer process that only scores) or vLLM/SGLang/url.
 */
import { join } from 'node:path';
import { rolloutTimeoutsMs } from './rollout-timeouts.js';
import { tokenScorers, type TokenScorer } from '../engines/index.js';
import { InputError } from '../errors/index.js';
import type { RecipeProblem } from '../recipe/checks.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import type { TeacherConfig } from '../recipe/distill-schema.js';
import { tokenizerMismatch } from '../tokens/tokenizer-match.js';
import { resolveModelDir } from './embedded-policy.js';
import { isEmbeddedEngine, startFixedModel } from './fixed-model.js';
import { engineKind } from './index.js';
import type { StartPolicyOptions } from './policy.js';
import { servingModelDir } from './user-engine.js';

/** A running teacher: what scores the student's tokens, and how to stop it. */
export interface RunningTeacher {
  readonly scorer: TokenScorer;
  /** For the run manifest: the teacher's path and engine kind. */
  readonly facts: Readonly<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * Starts the recipe's teacher (undefined without one), after checking it reads tokens as the student does.
 * @throws InputError when the teacher's tokenizer or chat template differs from the student's, or its
 * directory does not exist (yet); TrainerError/EngineStartError when its engine does not start.
 */
export async function startTeacher(
  options: Pick<StartPolicyOptions, 'recipe' | 'recipeDir' | 'logsDir' | 'runDir' | 'signal'>,
): Promise<RunningTeacher | undefined> {
  const { recipe, recipeDir } = options;
  const teacher = recipe.teacher;
  if (teacher === undefined || recipe.algorithm.name !== 'distill') return undefined;
  const teacherDir = isEmbeddedEngine(teacher.engine)
    ? embeddedTeacherDir(teacher, recipeDir)
    : servingModelDir(teacher.path, recipeDir);
  const mismatch = await tokenizerMismatch(engineKind(recipe).modelDir(recipe, recipeDir), teacherDir);
  if (mismatch !== undefined)
    throw new InputError(`teacher.path: the teacher's tokenizer is not the student's: ${mismatch}`, {
      hint: "distillation scores the student's token ids with the teacher: both must share one tokenizer and chat template (atk export copies the run's tokenizer beside a checkpoint)",
    });
  const facts = { teacher: teacher.path, teacher_engine: teacher.engine.kind };
  const fixed = await startFixedModel(
    {
      path: teacher.path,
      modelDir: teacherDir,
      engine: teacher.engine,
      servedModelName: 'teacher',
      what: 'teacher.engine.kind',
      logsName: 'teacher',
    },
    options,
  );
  const scorer = tokenScorers[fixed.protocol]({
    baseUrl: fixed.engine.baseUrl,
    model: fixed.engine.model,
    timeoutMs: rolloutTimeoutsMs(recipe.rollout).request,
  });
  return { scorer, facts, close: () => fixed.close() };
}

/** @throws InputError naming teacher.path and how to make it when it holds no model yet. */
function embeddedTeacherDir(teacher: TeacherConfig, recipeDir: string): string {
  try {
    return resolveModelDir(teacher.path, recipeDir);
  } catch {
    throw new InputError(`teacher.path: no config.json in ${join(recipeDir, teacher.path)}`, {
      hint: 'train the teacher first and export it, e.g. atk run recipes/quickstart.yaml, then atk export runs/quickstart/v001 runs/quickstart-teacher',
    });
  }
}

/**
 * The recipe's distillation settings that cannot work together (a recipe check): distill without a
 * teacher, a teacher without distill, a url teacher without its url.
 */
export function teacherProblems(recipe: Pick<ResolvedRecipe, 'algorithm' | 'teacher'>): RecipeProblem[] {
  const distill = recipe.algorithm.name === 'distill';
  if (distill && recipe.teacher === undefined)
    return [
      {
        path: 'algorithm.name',
        message: "distill needs a teacher to score the student's tokens: add teacher: {path: <model directory>}",
      },
    ];
  if (!distill && recipe.teacher !== undefined)
    return [
      {
        path: 'teacher',
        message: `only algorithm.name: distill uses a teacher (this recipe trains ${recipe.algorithm.name})`,
      },
    ];
  if (recipe.teacher?.engine.kind === 'url' && recipe.teacher.engine.url === undefined)
    return [{ path: 'teacher.engine.url', message: 'a url teacher engine needs the url of its running server' }];
  return [];
}
