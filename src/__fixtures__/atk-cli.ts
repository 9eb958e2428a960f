// The atk CLI from source, for tests that run it as a process without a build (node + tsx).
import { main } from '../cli/main.js';

await main(process.argv.slice(2));
