import type { Engine } from '../engines/types.js';
import type { EpisodeKit } from './collect.js';
import type { StallWatch } from './stall-watch.js';

/** The kit with its engine requests and reward calls registered as waits of `watch`. */
export function watchedKit(kit: EpisodeKit, watch: StallWatch): EpisodeKit {
  // The prototype keeps the client's other members (the `model` getter, setModel) working.
  const engine = Object.create(kit.engine) as Engine & Pick<Engine, 'generate' | 'generateN'>;
  engine.generate = (promptIds, params, signal) => watch.wait('engine', `generate from ${promptIds.length} prompt tokens`, () => kit.engine.generate(promptIds, params, signal));
  engine.generateN = (promptIds, params, signal) => watch.wait('engine', `generate ${params.n ?? 1} from ${promptIds.length} prompt tokens`, () => kit.engine.generateN(promptIds, params, signal));
  return { ...kit, engine, reward: (outcome) => watch.wait('reward', `reward of task ${outcome.task.id}`, () => kit.reward(outcome)) };
}
