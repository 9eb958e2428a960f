import { TextBlock, Tool, ToolResultBlock, type ToolContext, type ToolStreamGenerator } from '@strands-agents/sdk';
import type { EpisodeTools } from './types.js';

/**
 * Wraps every tool an `EpisodeTools` makes with {@link guardTool}, so the limit holds for
 * built-in, module and MCP tools alike.
 */
export function guardEpisodeTools(make: EpisodeTools, timeoutMs: number): EpisodeTools {
  return (env) => make(env).map((tool) => guardTool(tool, timeoutMs));
}

/**
 * A tool that behaves like `tool` except that a call which throws, runs past `timeoutMs`, or
 * returns something that is not a JSON-serialisable tool result becomes an error result the model
 * reads (`Error: ...`); the agent's tool-call guard counts it as `tool_failed` under the tool's
 * name. A timed-out call is told to stop through its context's `cancelSignal`.
 */
export function guardTool(tool: Tool, timeoutMs: number): Tool {
  return tool instanceof GuardedTool ? tool : new GuardedTool(tool, timeoutMs);
}

class GuardedTool extends Tool {
  readonly name: string;
  readonly description: string;
  readonly toolSpec: Tool['toolSpec'];

  constructor(
    private readonly inner: Tool,
    private readonly timeoutMs: number,
  ) {
    super();
    this.name = inner.name;
    this.description = inner.description;
    this.toolSpec = inner.toolSpec;
  }

  async *stream(context: ToolContext): ToolStreamGenerator {
    const { toolUseId } = context.toolUse;
    const timeout = new AbortController();
    const timedOut = new Promise<'timeout'>((resolve) =>
      timeout.signal.addEventListener('abort', () => resolve('timeout'), { once: true }),
    );
    const timer = setTimeout(() => timeout.abort(), this.timeoutMs);
    let generator: ToolStreamGenerator | undefined;
    try {
      // Direct calls (tests, benches) may pass no signal of their own.
      const cancelSignal = context.cancelSignal
        ? AbortSignal.any([context.cancelSignal, timeout.signal])
        : timeout.signal;
      generator = this.inner.stream({ ...context, cancelSignal });
      for (;;) {
        const next = await Promise.race([generator.next(), timedOut]);
        if (next === 'timeout') {
          // The call may ignore its signal; it is abandoned, and its late result is dropped.
          generator.return(undefined as never).catch(() => undefined);
          return errorResult(toolUseId, `tool '${this.name}' timed out after ${this.timeoutMs / 1000} s`);
        }
        if (next.done) return checkedResult(this.name, toolUseId, next.value);
        yield next.value;
      }
    } catch (error) {
      // The SDK's interrupt mechanism (not exported) must pass through to the agent loop.
      if (error instanceof Error && 'interrupts' in error) throw error;
      return errorResult(toolUseId, error instanceof Error ? error.message : String(error));
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The result as is when it is a tool result that survives JSON, else an error result saying why not. */
function checkedResult(name: string, toolUseId: string, result: unknown): ToolResultBlock {
  const block = result as Partial<ToolResultBlock> | undefined;
  if (
    !block ||
    typeof block !== 'object' ||
    !Array.isArray(block.content) ||
    (block.status !== 'success' && block.status !== 'error')
  ) {
    return errorResult(toolUseId, `tool '${name}' returned no tool result`);
  }
  try {
    JSON.stringify(block.content);
  } catch (error) {
    return errorResult(
      toolUseId,
      `tool '${name}' returned a result that cannot be serialised (${(error as Error).message})`,
    );
  }
  return block as ToolResultBlock;
}

function errorResult(toolUseId: string, message: string): ToolResultBlock {
  return new ToolResultBlock({
    toolUseId,
    status: 'error',
    content: [new TextBlock(`Error: ${message}`)],
    error: new Error(message),
  });
}
