// atk against Hugging Face TRL's GRPOTrainer on a real model, for `npm run bench real`: the shared side-by-side
// (bench/lib/trl-peer.ts) on SmolLM2 with one arithmetic answer in text, scored by its last number, which the base
// model solves some of (a learning signal from the first step) without the tool calls its chat template does not
// list. Full fine-tuning on both sides (the TRL venv has no peft), the same settings as the toy comparison except
// a learning rate for a pretrained 135M model.
//   ATK_BENCH_REAL_TRL_STEPS=3 ATK_BENCH_REAL_TRL_EVAL_TASKS=50
import { type PeerResult, arithAnswer, trlPeer } from './trl-peer.js';

export interface RealTrlSettings {
  readonly root: string;
  readonly work: string;
  readonly model: string;
  readonly threads: number;
}

export function realTrlPeer(settings: RealTrlSettings): PeerResult | string {
  return trlPeer(
    {
      root: settings.root,
      work: settings.work,
      steps: Number(process.env.ATK_BENCH_REAL_TRL_STEPS ?? 3),
      tasksPerStep: 8,
      groupSize: 8,
      learningRate: 1e-5,
      evalTasks: Number(process.env.ATK_BENCH_REAL_TRL_EVAL_TASKS ?? 50),
      seed: 0,
    },
    arithAnswer(settings.model, settings.threads),
  );
}
