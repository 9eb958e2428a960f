import { AfterModelCallEvent, type Message, type Plugin } from '@strands-agents/sdk';
import type { TitoModel } from './tito-model.js';

/**
 * The messages of an episode the TITO model has already turned into tokens, kept out of
 * `agent.messages`. On every model call the Strands SDK clones each message of `agent.messages`,
 * JSON-encodes each into its tracer's span events (even with no OpenTelemetry exporter) and scans them
 * for tool names, so with the whole history there atk's CPU per turn grew with the episode's length.
 * The model renders only messages it has not seen (their tokens are already in the trajectory), so once
 * a model call returns, everything before its answer moves here and `agent.messages` holds only the
 * turn in progress. `transcript()` is the whole conversation again, for rewards, users and records.
 */
export interface RenderedHistory {
  readonly plugin: Plugin;
  /** Every message of the episode in order: those moved out of `current` (the agent's messages), then `current`. */
  transcript(current: readonly Message[]): Message[];
}

export function renderedHistory(model: TitoModel): RenderedHistory {
  const moved: Message[] = [];
  return {
    plugin: {
      name: 'atk:rendered-history',
      initAgent(agent) {
        // After the model answered (before the SDK appends the answer): every message now in
        // agent.messages was rendered by this call or an earlier one. A failed call moves nothing.
        agent.addHook(AfterModelCallEvent, (event) => {
          if (event.error !== undefined || event.stopData === undefined) return;
          const rendered = agent.messages.splice(0, agent.messages.length);
          for (const m of rendered) moved.push(m);
          model.forgetRendered(rendered.length);
        });
      },
    },
    transcript: (current) => [...moved, ...current],
  };
}
