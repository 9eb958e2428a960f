import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { catalogModelDir, fetchModel } from './fetch.js';

const quiet = (): void => undefined;

describe('fetchModel', () => {
  test('rejects a name that is neither built in nor a hub id, suggesting the nearest built-in', async () => {
    const error = await fetchModel({ name: 'smollm2-135m-instrct', print: quiet }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toBe(
      "unknown model 'smollm2-135m-instrct': not a built-in name, and not a hub id (Org/Name)",
    );
    expect((error as InputError).hint).toBe('did you mean smollm2-135m-instruct?');
  });

  test('rejects options that do nothing for the kind of name given', async () => {
    await expect(fetchModel({ name: 'Org/Model', dtype: 'bfloat16', print: quiet })).rejects.toThrow(
      '--dtype applies to built-in names (imported from GGUF)',
    );
    await expect(fetchModel({ name: 'smollm2-135m-instruct', revision: 'v1', print: quiet })).rejects.toThrow(
      '--revision applies to hub ids, not smollm2-135m-instruct',
    );
  });
});

describe('catalogModelDir', () => {
  test('returns <cache>/atk/models/<name>', () => {
    expect(catalogModelDir('smollm2-135m-instruct', { XDG_CACHE_HOME: '/c' })).toBe(
      '/c/atk/models/smollm2-135m-instruct',
    );
  });
});
