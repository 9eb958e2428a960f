import { existsSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { tsImport } from 'tsx/esm/api';
import { InputError } from '../errors/index.js';

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts', '.tsx']);
const JAVASCRIPT = new Set(['.js', '.mjs', '.cjs']);

/**
 * Loads a user's TypeScript (through tsx) or JavaScript module and returns its exports. Bare
 * imports the user's directory cannot resolve (`@strands-agents/sdk`, `zod`) fall back to atk's
 * own copies, so a tool or reward file works in a folder with no node_modules of its own.
 * @throws InputError when the file is missing, has an unknown extension, or fails to load (the
 * message quotes the module's own error).
 */
export async function loadUserModule(file: string): Promise<Readonly<Record<string, unknown>>> {
  const ext = extname(file).toLowerCase();
  if (!TYPESCRIPT.has(ext) && !JAVASCRIPT.has(ext))
    throw new InputError(`${file}: a module must be .ts, .mts, .js or .mjs`);
  if (!existsSync(file))
    throw new InputError(`${file}: no such module`, {
      hint: 'a relative module path resolves against the directory of the recipe file that names it',
    });
  installFallbackResolution();
  const url = pathToFileURL(file).href;
  try {
    const namespace = (TYPESCRIPT.has(ext) ? await tsImport(url, import.meta.url) : await import(url)) as Record<
      string,
      unknown
    >;
    // Outside a "type": "module" package tsx compiles TypeScript to CommonJS, and the namespace's
    // default is then the whole exports object; unwrap it so both modes look the same.
    const cjs = namespace.default as { __esModule?: unknown } | undefined;
    return cjs && typeof cjs === 'object' && cjs.__esModule === true
      ? { ...(cjs as Record<string, unknown>) }
      : namespace;
  } catch (error) {
    throw new InputError(
      `${file}: failed to load: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
      { cause: error },
    );
  }
}

let installed = false;

/** Once per process: a resolve hook that retries unresolvable bare specifiers from atk's own location. */
function installFallbackResolution(): void {
  // registerHooks arrived in Node 22.15; on older 22.x user modules need their own node_modules.
  if (installed || typeof nodeModule.registerHooks !== 'function') return;
  installed = true;
  nodeModule.registerHooks({
    resolve(specifier, context, nextResolve) {
      try {
        return nextResolve(specifier, context);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if ((code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') || !isBareSpecifier(specifier))
          throw error;
        try {
          return { url: import.meta.resolve(specifier), shortCircuit: true };
        } catch {
          throw error;
        }
      }
    },
  });
}

function isBareSpecifier(specifier: string): boolean {
  return !specifier.startsWith('.') && !specifier.startsWith('/') && !/^[a-z][a-z0-9+.-]*:/i.test(specifier);
}
