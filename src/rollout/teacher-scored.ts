/**
 * Episodes scored by a distillation teacher (`algorithm.name: distill`): each finished episode's token
 * segments are sent to the teacher, which returns its logprob of every token, as the reward scores it.
 * Scoring each episode as it ends overlaps the teacher with the student's generation of the others.
 */
import type { TokenScorer } from '../engines/index.js';
import type { TokenTrajectory } from '../tokens/trajectory.js';
import type { EpisodeRunner, Rollout } from './collect.js';

/**
 * `runner` whose rollouts also carry `teacherLogprobs`: per segment (earlier ones first, as the batch
 * orders them), the teacher's logprob of each token. Failed episodes and segments without generated
 * tokens are not sent (their scores are empty arrays).
 * @throws ProviderError when the teacher cannot score (a harness failure: the step fails, as a lost engine's does).
 */
export function teacherScoredEpisodes(runner: EpisodeRunner, teacher: TokenScorer): EpisodeRunner {
  return {
    async collect(kit, request) {
      const rollout = await runner.collect(kit, request);
      if (rollout.failed) return rollout;
      const segments = [...(rollout.episode.priorSegments ?? []).map((s) => s.trajectory), rollout.episode.trajectory];
      const teacherLogprobs = await Promise.all(
        segments.map((t) => (generated(t) ? teacher.score(t.ids, request.signal) : Promise.resolve([]))),
      );
      return { ...rollout, teacherLogprobs };
    },
  };
}

/**
 * The sampled-token estimate of the reverse KL, KL(student || teacher), over the generated tokens of the
 * rollouts the teacher scored: mean of log pi_student(y_t) - log pi_teacher(y_t), the student's logprobs
 * being those the engine sampled with. Undefined when none was scored.
 */
export function teacherReverseKl(rollouts: readonly Rollout[]): number | undefined {
  let sum = 0;
  let count = 0;
  for (const rollout of rollouts) {
    if (!rollout.teacherLogprobs) continue;
    const segments = [...(rollout.episode.priorSegments ?? []).map((s) => s.trajectory), rollout.episode.trajectory];
    segments.forEach((trajectory, i) => {
      const teacher = rollout.teacherLogprobs?.[i] ?? [];
      const student = trajectory.logprobsFull();
      trajectory.mask().forEach((m, t) => {
        const q = teacher[t];
        const p = student[t];
        if (m !== 1 || q === null || q === undefined || p === null || p === undefined) return;
        sum += p - q;
        count++;
      });
    });
  }
  return count ? sum / count : undefined;
}

function generated(trajectory: TokenTrajectory): boolean {
  return trajectory.mask().some((m) => m === 1);
}
