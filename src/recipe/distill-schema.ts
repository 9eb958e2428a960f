/**
 * On-policy distillation's recipe keys: the teacher model (`teacher`) and how its signal is mixed
 * with the task reward (`algorithm.distill`). The descriptions carry the formula, so docs/recipes.md
 * and `atk explain` state it.
 */
import { z } from 'zod';
import { EngineSchema } from './model-schema.js';

export const DistillSchema = z
  .strictObject({
    reward_weight: z
      .number()
      .nonnegative()
      .default(0)
      .describe(
        "w in A_t = (log pi_teacher(y_t) - log pi_student(y_t)) + w * A_group: the weight of the task reward's group advantage (the preset's baseline and std normalisation) beside the teacher term; 0 = pure distillation, the reward is still logged.",
      ),
  })
  .describe(
    'On-policy distillation (Agarwal et al. 2024; Thinking Machines, "On-Policy Distillation", 2025): the student samples, the teacher scores every sampled token, and each token\'s advantage is the negative per-token reverse KL, log pi_teacher(y_t) - log pi_student(y_t), with discount 0 (no credit to earlier tokens). Only model-generated tokens are trained. Used with algorithm.name: distill.',
  );

export const TeacherSchema = z
  .strictObject({
    path: z
      .string()
      .min(1)
      .describe(
        "The teacher: a local Hugging Face directory (relative to the recipe; `atk export` turns a run into one, tokenizer included) or, for vllm/sglang, a hub id. Its tokenizer must be the student's.",
      ),
    engine: EngineSchema.prefault({}).describe(
      "How the teacher is served: embedded (a second trainer process that only scores, with model.trainer's device and threads), vllm, sglang (launched beside the policy's) or url (a running server).",
    ),
  })
  .describe(
    'The teacher model of algorithm.name: distill; it scores the tokens the student samples and is never trained.',
  );

export type DistillConfig = z.infer<typeof DistillSchema>;
export type TeacherConfig = z.infer<typeof TeacherSchema>;
