// Arith data path: problems generated per second, warm-start reference transcripts tokenised per second
// (the sft step's data cost), calculator evaluations per second, and tokens per transcript.
import { join } from 'node:path';
import { toChatTools } from '../src/agent/chat-messages.js';
import { ArithOptions, generateArith, type ArithData } from '../src/datasets/arith.js';
import { referenceTrajectory } from '../src/rollout/reference.js';
import { loadModelTokenizer } from '../src/tokens/index.js';
import { calculate } from '../src/tools/calculator-eval.js';
import { calculatorTool } from '../src/tools/calculator.js';
import { projectRoot } from '../src/util/paths.js';

const options = ArithOptions.parse({ levels: ['add', 'sub', 'mul'], max_digits: 3, train_size: 5000 });
let start = performance.now();
const tasks = generateArith('train', options);
const generateS = (performance.now() - start) / 1000;

const tokenizer = await loadModelTokenizer(join(projectRoot(), 'models', 'tiny-arith'));
const tools = toChatTools([calculatorTool().toolSpec]);
start = performance.now();
const lengths = tasks.map((t) => referenceTrajectory(tokenizer, (t.data as ArithData).reference, tools).length);
const tokeniseS = (performance.now() - start) / 1000;

const expressions = tasks.map((t) => (t.data as ArithData).expression);
start = performance.now();
for (let round = 0; round < 4; round++) for (const e of expressions) calculate(e);
const calcS = (performance.now() - start) / 1000;

const mean = lengths.reduce((a, b) => a + b, 0) / lengths.length;
console.log(`arith: ${(tasks.length / generateS).toFixed(0)} problems/s generated (with reference transcripts)`);
console.log(`arith: ${(tasks.length / tokeniseS).toFixed(0)} reference transcripts/s tokenised on models/tiny-arith`);
console.log(`arith: ${((4 * expressions.length) / calcS).toFixed(0)} calculator evaluations/s`);
console.log(`arith: ${mean.toFixed(1)} tokens per 1-3 digit transcript on average, ${Math.max(...lengths)} at most`);
