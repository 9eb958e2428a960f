import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TrainerError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { createTrainerClient, type LoadModelRequest, type TrainBatchInput } from './client.js';

/** The shared protocol fixtures; pytest checks the trainer against the same files. */
function fixture(name: string): unknown {
  return JSON.parse(readFileSync(join(projectRoot(), 'trainer', 'protocol', name), 'utf8'));
}

const REPLIES: Record<string, [number, string]> = {
  'GET /control/health': [200, 'health.response.json'],
  'POST /control/load_model': [200, 'load_model.response.json'],
  'POST /control/train_step': [200, 'train_step.response.json'],
  'POST /control/save': [200, 'checkpoint.response.json'],
  'POST /control/load_checkpoint': [400, 'error.response.json'],
  'POST /control/logprobs': [200, 'logprobs.response.json'],
};

describe('createTrainerClient', () => {
  let server: Server;
  let baseUrl = '';
  const received: Record<string, unknown> = {};
  beforeAll(async () => {
    // Replays the protocol fixtures over real HTTP and records what the client sent.
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const key = `${req.method} ${req.url}`;
        received[key] = body ? JSON.parse(body) : null;
        const [status, file] = REPLIES[key] ?? [404, 'error.response.json'];
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(fixture(file)));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('returns parsed replies and sends the fixture requests', async () => {
    const client = createTrainerClient({ baseUrl, logFile: '/tmp/trainer.log' });
    expect(await client.health()).toStrictEqual(fixture('health.response.json'));
    expect(await client.loadModel(fixture('load_model.request.json') as LoadModelRequest)).toStrictEqual(
      fixture('load_model.response.json'),
    );
    expect(received['POST /control/load_model']).toStrictEqual(fixture('load_model.request.json'));

    const batch = fixture('train_step.request.json') as TrainBatchInput;
    const step = await client.trainStep({ ...batch, groups: 1, droppedGroups: 0 } as TrainBatchInput);
    const reply = fixture('train_step.response.json') as { policy_version: number; metrics: Record<string, number> };
    expect(step).toStrictEqual({ metrics: reply.metrics, policyVersion: reply.policy_version });
    expect(received['POST /control/train_step']).toStrictEqual(batch); // bookkeeping fields are not sent

    expect(await client.save('/tmp/atk-run/checkpoints/step-00001')).toStrictEqual(fixture('checkpoint.response.json'));
    expect(received['POST /control/save']).toStrictEqual(fixture('save.request.json'));

    const scored = fixture('logprobs.response.json') as { policy_version: number; logprobs: (number | null)[] };
    const ids = (fixture('logprobs.request.json') as { token_ids: number[] }).token_ids;
    expect(await client.logprobs(ids)).toStrictEqual({
      policyVersion: scored.policy_version,
      logprobs: scored.logprobs,
    });
    expect(received['POST /control/logprobs']).toStrictEqual(fixture('logprobs.request.json'));
  });

  test('rejects a 4xx with a one-line TrainerError carrying the server reason and log path', async () => {
    const client = createTrainerClient({ baseUrl, logFile: '/tmp/trainer.log' });
    const error = await client.loadCheckpoint('/nowhere').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TrainerError);
    expect((error as TrainerError).message).toBe(
      'trainer /control/load_checkpoint answered 400: sequences[0].loss_mask: expected 6 values (one per token), got 5 (log: /tmp/trainer.log)',
    );
    expect((error as TrainerError).logPath).toBe('/tmp/trainer.log');
  });
});
