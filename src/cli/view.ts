import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { InputError } from '../errors/index.js';
import { startViewServer, viewerAppDir, type ViewServer } from '../view/server.js';
import { defineCommand } from './define-command.js';
import { shellQuote } from '../util/shell-quote.js';

export interface ViewOptions {
  /** Runs directories or run directories (default: `runs`). */
  readonly paths: readonly string[];
  readonly port?: number;
  readonly host?: string;
  readonly token?: string;
  /** Open the URL in the desktop's browser. */
  readonly open?: boolean;
  /** The view to open, as the part of a viewer URL after `#/` (e.g. `episodes?run=quickstart/v001`). */
  readonly at?: string;
}

export const viewCommand = defineCommand({
  command: 'view [runs..]',
  describe: 'Serve a local web viewer of runs (live while they train): runs, curves, episodes, tokens',
  positionals: {
    runs: {
      type: 'string',
      array: true,
      default: ['runs'],
      describe: 'Runs directories (output.runs_dir) or run directories',
    },
  },
  options: {
    port: { type: 'number', default: 0, describe: 'Port to listen on (default: a free one)' },
    host: {
      type: 'string',
      default: '127.0.0.1',
      describe: 'Address to listen on; anything but loopback needs --token',
    },
    token: {
      type: 'string',
      describe: 'Secret every request must carry (?token=, a cookie, or a Bearer header)',
    },
    open: { type: 'boolean', default: false, describe: "Open the viewer in the desktop's browser" },
    at: { type: 'string', describe: 'The view to open, e.g. "episodes?run=quickstart/v001&only=failed"' },
  },
  examples: [
    ['$0 view', 'every run under runs/'],
    ['$0 view runs/quickstart/v001 runs/quickstart/v002 --open', 'two runs, in the browser'],
    ['$0 view --host 0.0.0.0 --token "$(openssl rand -hex 16)"', 'reachable from other machines, with a token'],
  ],
  handler: async (argv) => {
    const server = await runView({ ...argv, paths: argv.runs });
    const url = viewUrl(server, argv.at);
    const count = server.catalog.list().length;
    process.stdout.write(
      `atk view: ${count} run${count === 1 ? '' : 's'} from ${argv.runs.join(', ')}\n${url}\n(Ctrl-C to stop)\n`,
    );
    if (argv.open) openInBrowser(url);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await server.close();
  },
});

/**
 * `atk view`: start the viewer's server on the given runs.
 * @throws InputError when the frontend is not built, a path does not exist, the host needs a token, or the port is taken.
 */
export async function runView(options: ViewOptions): Promise<ViewServer> {
  if (!existsSync(join(viewerAppDir(), 'main.js'))) {
    throw new InputError(`the viewer's frontend is not built (${viewerAppDir()} has no main.js)`, {
      hint: 'run npm run build in the atk checkout',
    });
  }
  return startViewServer({
    paths: options.paths.length ? options.paths : ['runs'],
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.token !== undefined ? { token: options.token } : {}),
  });
}

/** The server's URL opened at a view (`at` is what follows `#/`). */
export function viewUrl(server: ViewServer, at?: string): string {
  return at ? `${server.url}#/${at.replace(/^#?\/?/, '')}` : server.url;
}

/**
 * The line `atk report` and `atk inspect-trajectory` print: the command that opens this run (and
 * view) in `atk view`. A run directory given alone is the run `<name>/<version>` in the viewer.
 */
export function viewHint(runDir: string, at: string): string {
  const id = `${basename(dirname(runDir))}/${basename(runDir)}`;
  const shown = relative(process.cwd(), runDir) || '.';
  const path = shown.startsWith('..') ? runDir : shown;
  return `in the browser: atk view ${shellQuote(path)} --open --at '${at.replaceAll('{run}', encodeURIComponent(id).replaceAll('%2F', '/'))}'`;
}

function openInBrowser(url: string): void {
  const opener = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  const child = spawn(opener, [url], { detached: true, stdio: 'ignore' });
  child.on('error', () => process.stderr.write(`could not start ${opener}; open ${url} yourself\n`));
  child.unref();
}
