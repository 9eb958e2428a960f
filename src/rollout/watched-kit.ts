import { Tool, type ToolContext, type ToolStreamGenerator } from '@strands-agents/sdk';
import type { Engine } from '../engines/types.js';
import type { EpisodeKit } from './collect.js';
import type { WaitRecorder } from './stall-watch.js';

/**
 * The kit with its engine requests, tool calls, simulated-user turns and reward calls registered as waits
 * of `watch`; episodes on rollout workers register theirs there too (`waits`).
 */
export function watchedKit(kit: EpisodeKit, watch: WaitRecorder): EpisodeKit {
  // The prototype keeps the client's other members (the `model` getter, setModel) working.
  const engine = Object.create(kit.engine) as Engine & Pick<Engine, 'generate' | 'generateN'>;
  engine.generate = (promptIds, params, signal) =>
    watch.wait('engine', `generate from ${promptIds.length} prompt tokens`, () =>
      kit.engine.generate(promptIds, params, signal),
    );
  engine.generateN = (promptIds, params, signal) =>
    watch.wait('engine', `generate ${params.n ?? 1} from ${promptIds.length} prompt tokens`, () =>
      kit.engine.generateN(promptIds, params, signal),
    );
  const user = kit.user;
  return {
    ...kit,
    engine,
    waits: watch,
    tools: kit.tools.map((make) => (env) => make(env).map((tool) => new WatchedTool(tool, watch))),
    reward: (outcome) => watch.wait('reward', `reward of task ${outcome.task.id}`, () => kit.reward(outcome)),
    ...(user
      ? {
          user: (task, env) => {
            const episodeUser = user(task, env);
            return (
              episodeUser && {
                ...episodeUser,
                finish: episodeUser.finish.bind(episodeUser),
                respond: (conversation) =>
                  watch.wait('user', `user turn of task ${task.id}`, () => episodeUser.respond(conversation)),
              }
            );
          },
        }
      : {}),
  };
}

/** A tool whose calls are open waits while they run. */
class WatchedTool extends Tool {
  readonly name: string;
  readonly description: string;
  readonly toolSpec: Tool['toolSpec'];

  constructor(
    private readonly inner: Tool,
    private readonly watch: WaitRecorder,
  ) {
    super();
    this.name = inner.name;
    this.description = inner.description;
    this.toolSpec = inner.toolSpec;
  }

  async *stream(context: ToolContext): ToolStreamGenerator {
    const end = this.watch.begin('tool', `call of ${this.name}`);
    try {
      const result = yield* this.inner.stream(context);
      end();
      return result;
    } catch (error) {
      end(error);
      throw error;
    } finally {
      end();
    }
  }
}
