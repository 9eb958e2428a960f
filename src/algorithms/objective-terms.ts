/**
 * The terms of the objective a resolved recipe optimises, one entry each: the recipe keys it reads, the paper
 * it comes from and its formula written out for these settings. `atk explain` prints them in this order; a new
 * objective key (a loss term, a sampling rule) adds one entry here.
 */
import { policyLoss, trainsWithCrossEntropy } from '../recipe/presets.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';

/** One term: what it reads and how it states itself for a recipe. */
export interface ObjectiveTerm {
  /** Short name, printed as the section head. */
  readonly name: string;
  /** Dotted paths of the resolved recipe's settings this term reads, in print order. */
  readonly settings: (recipe: ResolvedRecipe) => readonly string[];
  /** What the term is for this recipe: the formula lines and the paper (or `off`, and why). */
  readonly state: (recipe: ResolvedRecipe) => TermState;
}

/** A term as a recipe sets it. */
export interface TermState {
  /** One line: which variant, or why the term is off. */
  readonly summary: string;
  readonly formula: readonly string[];
  readonly paper?: string;
}

const GRPO_PAPER = 'Shao et al. 2024, DeepSeekMath (GRPO), arXiv 2402.03300';
const DAPO_PAPER = 'Yu et al. 2025, DAPO, arXiv 2503.14476';

/** Every term, in the order the objective is assembled: reward, advantage, ratio and loss, aggregation, KL. */
export const OBJECTIVE_TERMS: readonly ObjectiveTerm[] = [
  {
    name: 'reward shaping',
    settings: (r) =>
      r.reward.overlong ? ['reward.overlong.max_tokens', 'reward.overlong.buffer'] : ['reward.overlong'],
    state: (r) => {
      const o = r.reward.overlong;
      if (!o) return { summary: 'off: the reward is the task reward alone', formula: [] };
      const free = o.max_tokens - o.buffer;
      return {
        summary: 'soft overlong punishment added to the task reward',
        formula: [
          `R(y) = R_task(y) + R_length(|y|), |y| = generated tokens of the episode, L_max = ${o.max_tokens}, L_cache = ${o.buffer}`,
          `R_length = 0 if |y| <= ${free}; (${free} - |y|) / ${o.buffer} if ${free} < |y| <= ${o.max_tokens}; -1 beyond`,
        ],
        paper: `${DAPO_PAPER}, eq. 13`,
      };
    },
  },
  {
    name: 'sampling',
    settings: (r) => [
      ...(r.algorithm.dynamic_sampling
        ? ['algorithm.dynamic_sampling.max_rounds', 'train.tasks_per_step']
        : ['algorithm.dynamic_sampling']),
      ...(r.dataset.curriculum
        ? (['skip_solved', 'skip_unsolved'] as const)
            .filter((k) => r.dataset.curriculum?.[k] !== undefined)
            .map((k) => `dataset.curriculum.${k}`)
        : ['dataset.curriculum']),
    ],
    state: samplingState,
  },
  {
    name: 'advantage',
    settings: (r) =>
      trainsWithCrossEntropy(r.algorithm.name)
        ? ['algorithm.name']
        : [
            'algorithm.group_size',
            'algorithm.baseline',
            'algorithm.std_normalize',
            ...(r.algorithm.std_normalize ? ['algorithm.std'] : []),
            'algorithm.drop_zero_variance_groups',
            'algorithm.mask_truncated',
          ],
    state: advantageState,
  },
  {
    name: 'distillation',
    settings: (r) =>
      r.algorithm.name === 'distill'
        ? ['algorithm.distill.reward_weight', 'teacher.path', 'teacher.engine.kind']
        : ['algorithm.name'],
    state: distillationState,
  },
  {
    name: 'policy loss',
    settings: ({ algorithm: a }) => {
      if (trainsWithCrossEntropy(a.name)) return ['algorithm.name'];
      if (policyLoss(a.name) === 'reinforce') return ['algorithm.name', 'algorithm.updates_per_step'];
      const clip = ['algorithm.name', 'algorithm.clip_low', 'algorithm.clip_high'];
      if (policyLoss(a.name) === 'ppo') clip.push('algorithm.dual_clip');
      return [...clip, 'algorithm.updates_per_step'];
    },
    state: policyLossState,
  },
  {
    name: 'mismatch correction',
    settings: (r) =>
      r.algorithm.mismatch
        ? [
            'algorithm.mismatch.mode',
            'algorithm.mismatch.level',
            'algorithm.mismatch.low',
            'algorithm.mismatch.high',
            ...(r.algorithm.mismatch.mode === 'tis' ? [] : ['algorithm.mismatch.masked_tokens']),
            'algorithm.mismatch.trust_region',
          ]
        : ['algorithm.mismatch'],
    state: mismatchState,
  },
  {
    name: 'aggregation',
    settings: () => ['algorithm.loss_aggregation'],
    state: aggregationState,
  },
  {
    name: 'KL penalty',
    settings: (r) =>
      r.algorithm.kl_coef > 0 ? ['algorithm.kl_coef', 'algorithm.kl_estimator'] : ['algorithm.kl_coef'],
    state: ({ algorithm }) => {
      if (algorithm.kl_coef <= 0) return { summary: 'off: no reference model is kept', formula: [] };
      const k = {
        k1: 'k1 = log pi(y_t) - log pi_ref(y_t)',
        k2: 'k2 = (log pi(y_t) - log pi_ref(y_t))^2 / 2',
        k3: 'k3 = pi_ref(y_t) / pi(y_t) - log(pi_ref(y_t) / pi(y_t)) - 1',
      }[algorithm.kl_estimator];
      return {
        summary: `${algorithm.kl_coef} x KL(pi || pi_ref) per token, pi_ref the frozen initial policy`,
        formula: [`loss_t += ${algorithm.kl_coef} * ${k}`],
        paper: `Schulman 2020, "Approximating KL divergence" (${algorithm.kl_estimator}); ${GRPO_PAPER}`,
      };
    },
  },
];

function advantageState({ algorithm: a }: ResolvedRecipe): TermState {
  if (trainsWithCrossEntropy(a.name))
    return {
      summary: `none: ${a.name} trains with cross-entropy on ${a.name === 'sft' ? "the dataset's reference conversations" : 'successful episodes (reward >= reward.success_threshold)'}`,
      formula: [],
    };
  const center = {
    group_mean: { text: 'r_i - mean_j r_j', paper: GRPO_PAPER },
    leave_one_out: { text: 'r_i - mean_{j != i} r_j', paper: 'Ahmadian et al. 2024, RLOO, arXiv 2402.14740' },
    batch_mean: { text: 'r_i - mean over the batch of r', paper: 'Williams 1992, REINFORCE with a baseline' },
    none: { text: 'r_i', paper: 'Williams 1992, REINFORCE' },
  }[a.baseline];
  const std = a.std === 'population' ? 'sqrt(sum_j (r_j - mean r)^2 / G)' : 'sqrt(sum_j (r_j - mean r)^2 / (G - 1))';
  const scaled = a.std_normalize ? `(${center.text}) / (std_j r_j + 1e-6), std_j r_j = ${std}` : center.text;
  const formula = [`A_i = ${scaled}, over the ${a.group_size} episodes j of a task; every token of y_i gets A_i`];
  if (a.drop_zero_variance_groups) formula.push('groups whose rewards are all equal (A = 0) are left out of the batch');
  if (a.mask_truncated)
    formula.push('episodes cut off by a generation limit count in the baseline but are not trained');
  const papers = [center.paper];
  if (!a.std_normalize && a.baseline === 'group_mean') papers.push('Liu et al. 2025, Dr. GRPO, arXiv 2503.20783');
  if (a.mask_truncated) papers.push(`${DAPO_PAPER} (overlong filtering)`);
  return {
    summary: `${a.baseline.replace(/_/g, '-')} baseline${a.std_normalize ? `, divided by the group's ${a.std} std` : ''}`,
    formula,
    paper: papers.join('; '),
  };
}

function policyLossState({ algorithm: a }: ResolvedRecipe): TermState {
  if (trainsWithCrossEntropy(a.name))
    return { summary: 'cross-entropy', formula: ['loss_t = -log pi(y_t)'], paper: 'supervised fine-tuning' };
  const lo = 1 - a.clip_low;
  const hi = 1 + a.clip_high;
  const old =
    a.mismatch || policyLoss(a.name) === 'gspo'
      ? "pi_old = the trainer's own logprobs before the step's first update"
      : "pi_old = the engine's sampling logprobs";
  const passes = `${a.updates_per_step} optimizer update(s) per step on the batch`;
  switch (policyLoss(a.name)) {
    case 'gspo':
      return {
        summary: `GSPO: one length-normalised ratio per sequence, clipped at [${lo}, ${hi}]`,
        formula: [
          's_i = (pi(y_i) / pi_old(y_i))^(1/|y_i|) = exp(mean_t log(pi(y_t) / pi_old(y_t)))',
          `loss_i,t = -min(s_i,t A_i, clip(s_i,t, ${lo}, ${hi}) A_i), s_i,t = sg[s_i] pi(y_t) / sg[pi(y_t)] (GSPO-token: value s_i, gradient s_i grad log pi(y_t))`,
          `${old}; ${passes}`,
        ],
        paper: 'Zheng et al. 2025, GSPO, arXiv 2507.18071, eq. 5-7 and 11-12',
      };
    case 'cispo':
      return {
        summary: `CISPO: REINFORCE weighted by the clipped, detached ratio; weight in [${Math.max(lo, 0)}, ${hi}]`,
        formula: [
          'r_t = pi(y_t) / pi_old(y_t)',
          `loss_t = -sg[clip(r_t, ${Math.max(lo, 0)}, ${hi})] A_i log pi(y_t) (every token keeps its gradient)`,
          `${old}; ${passes}`,
        ],
        paper: 'MiniMax 2025, MiniMax-M1 (CISPO), arXiv 2506.13585, eq. 4-5',
      };
    case 'reinforce':
      return {
        summary: 'REINFORCE: the advantage times the log-likelihood, no ratio and no clip',
        formula: ['loss_t = -A_i log pi(y_t)', passes],
        paper: 'Williams 1992, REINFORCE',
      };
    default: {
      const c = a.dual_clip;
      return {
        summary: `PPO clipped surrogate per token, clipped at [${lo}, ${hi}]${c === undefined ? '' : `, dual-clip at ${c}`}`,
        formula: [
          'r_t = pi(y_t) / pi_old(y_t)',
          c === undefined
            ? `loss_t = -min(r_t A_i, clip(r_t, ${lo}, ${hi}) A_i)`
            : `loss_t = -min(r_t A_i, clip(r_t, ${lo}, ${hi}) A_i) if A_i >= 0, else -max(min(r_t A_i, clip(r_t, ${lo}, ${hi}) A_i), ${c} A_i)`,
          `${old}; ${passes}`,
        ],
        paper: `Schulman et al. 2017, PPO, arXiv 1707.06347; clip-higher (clip_high > clip_low): ${DAPO_PAPER}${c === undefined ? '' : '; dual-clip: Ye et al. 2020, arXiv 1912.09729'}`,
      };
    }
  }
}

function mismatchState({ algorithm: a }: ResolvedRecipe): TermState {
  const m = a.mismatch;
  if (!m) return { summary: "off: the engine's logprobs are pi_old, uncorrected", formula: [] };
  const rho = {
    token: 'rho_t = pi_trainer(y_t) / pi_engine(y_t)',
    sequence: 'rho_i = prod_t pi_trainer(y_t) / pi_engine(y_t), one per sequence',
    geometric: 'rho_i = (prod_t pi_trainer(y_t) / pi_engine(y_t))^(1/|y_i|), one per sequence (geometric mean)',
  }[m.level];
  const action = {
    tis: `loss_t *= sg[clip(rho, ${m.low}, ${m.high})]`,
    mask: `loss_t *= sg[rho] if ${m.low} <= rho <= ${m.high} else 0`,
    reject: `loss_t *= 1 if ${m.low} <= rho <= ${m.high} else 0`,
  }[m.mode];
  const formula = [`${rho}, pi_trainer under the weights the step starts from`, action];
  if (m.mode !== 'tis')
    formula.push(
      m.masked_tokens === 'count'
        ? 'a token outside the range still counts in the aggregation (|y_i|, the token count); share: train/mismatch_masked_fraction'
        : 'a token outside the range leaves the aggregation counts, a sequence with none left the sequence count; share: train/mismatch_masked_fraction',
    );
  if (m.trust_region && policyLoss(a.name) === 'ppo')
    formula.push('tokens PPO would clip against pi_engine get no gradient (the trust region stays at the sampler)');
  const name = { tis: 'truncated importance weights', mask: 'masked importance weights', reject: 'rejection' }[m.mode];
  const level = { token: 'token', sequence: 'sequence', geometric: 'sequence (geometric mean)' }[m.level];
  return {
    summary: `${name} per ${level}`,
    formula,
    paper: [
      {
        tis: 'Yao et al. 2025, "Your efficient RL framework secretly brings you off-policy RL training" (TIS); Fu et al. 2025, AReaL decoupled PPO, arXiv 2505.24298',
        mask: 'Ling team 2025, "Small leak can sink a great ship: boost RL training on MoE with IcePop" (M(k) = k inside [alpha, beta], 0 outside)',
        reject: 'Liu, Li et al. 2025, "When speed kills stability" (rejection sampling; verl\'s rollout_rs)',
      }[m.mode],
      ...(m.level === 'token'
        ? []
        : [
            `Liu, Li et al. 2025, "When speed kills stability" (${m.level === 'sequence' ? 'Seq-TIS / Seq-MIS' : 'Geo-RS'})`,
          ]),
    ].join('; '),
  };
}

function aggregationState({ algorithm: a, agent }: ResolvedRecipe): TermState {
  const constant = agent.max_new_tokens * agent.max_turns;
  const forms = {
    'token-sum': {
      f: 'L = sum_i sum_t loss_i,t (no normaliser: the gradient grows with the batch)',
      p: 'Williams 1992, REINFORCE as a sum over samples',
    },
    'token-mean': { f: 'L = sum_i sum_t loss_i,t / sum_i |y_i| (every token weighs the same)', p: DAPO_PAPER },
    'seq-mean-token-sum': { f: 'L = (1/N) sum_i sum_t loss_i,t', p: 'sum per sequence, mean over the N sequences' },
    'seq-mean-token-mean': { f: 'L = (1/N) sum_i (1/|y_i|) sum_t loss_i,t', p: GRPO_PAPER },
    'seq-mean-token-sum-norm': {
      f: `L = (1/N) sum_i sum_t loss_i,t / ${constant} (agent.max_new_tokens x agent.max_turns)`,
      p: 'Liu et al. 2025, Dr. GRPO, arXiv 2503.20783',
    },
  }[a.loss_aggregation];
  return {
    summary: a.loss_aggregation,
    formula: [forms.f, 'N sequences and |y_i| trained tokens over the whole step batch'],
    paper: forms.p,
  };
}

function distillationState({ algorithm: a }: ResolvedRecipe): TermState {
  if (a.name !== 'distill') return { summary: 'off: no teacher (algorithm.name distill)', formula: [] };
  const w = a.distill?.reward_weight ?? 0;
  return {
    summary: `each generated token's advantage is the negative reverse KL to the teacher${w > 0 ? `, plus ${w} x the group advantage` : ''}`,
    formula: [
      `A_t = log pi_teacher(y_t | y_<t) - log pi_student(y_t | y_<t)${w > 0 ? ` + ${w} * A_i` : ''}, discount 0 (each token answers for itself)`,
      'pi_student = the engine logprob y_t was sampled with; pi_teacher = the teacher engine scoring the whole sequence',
      'only tokens the model generated (loss mask 1) carry an advantage; no group is dropped',
    ],
    paper: 'Agarwal et al. 2024, GKD, arXiv 2306.13649; Thinking Machines Lab 2025, "On-Policy Distillation"',
  };
}

/** Which groups a step trains on: DAPO's dynamic sampling, and the tasks the curriculum leaves out of the stream. */
function samplingState({ algorithm: a, dataset, train }: ResolvedRecipe): TermState {
  const dynamic = a.dynamic_sampling;
  const curriculum = dataset.curriculum;
  const skips = [
    ...(curriculum?.skip_solved === undefined ? [] : [`solved in each of its last ${curriculum.skip_solved} groups`]),
    ...(curriculum?.skip_unsolved === undefined
      ? []
      : [`unsolved in each of its last ${curriculum.skip_unsolved} groups`]),
  ];
  const formula = [
    ...(dynamic
      ? [
          `batch = the first ${train.tasks_per_step} groups with std(R_1..R_G) > 0 (0 < #correct < G for a 0/1 reward)`,
          `drawn in up to ${dynamic.max_rounds} rounds, each of as many new tasks as groups are still missing; short after the last round: train on those kept`,
        ]
      : []),
    ...(skips.length > 0 ? [`the data stream passes over a task ${skips.join(' or ')}`] : []),
  ];
  if (formula.length === 0)
    return { summary: "off: each step's tasks_per_step groups, in data order, every task every epoch", formula };
  return {
    summary: [
      ...(dynamic ? [`dynamic sampling: refilled to ${train.tasks_per_step} groups with a reward spread`] : []),
      ...(skips.length > 0 ? ['curriculum'] : []),
    ].join('; '),
    formula,
    ...(dynamic ? { paper: `${DAPO_PAPER}, eq. 11 and Algorithm 1` } : {}),
  };
}
