import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Why two model directories do not share one tokenizer, or undefined when they do: the same vocabulary
 * (tokenizer.json's model and added tokens: every id names the same token) and the same chat template
 * (tokenizer_config.json's, else chat_template.jinja). A teacher scoring a student's token ids must read
 * them as the student wrote them, and render prompts the same way.
 */
export async function tokenizerMismatch(studentDir: string, teacherDir: string): Promise<string | undefined> {
  const [student, teacher] = await Promise.all([tokenizerFacts(studentDir), tokenizerFacts(teacherDir)]);
  if (teacher.vocab === undefined) return `no tokenizer.json in ${teacherDir}`;
  if (student.vocab === undefined) return `no tokenizer.json in ${studentDir}`;
  if (student.vocab !== teacher.vocab) {
    const size = (f: TokenizerFacts): number => f.size ?? 0;
    return `the vocabularies differ (${size(student)} tokens in ${studentDir}, ${size(teacher)} in ${teacherDir}, or the same ids name other tokens)`;
  }
  if (student.template !== teacher.template)
    return `the chat templates differ (${studentDir} and ${teacherDir} render conversations differently)`;
  return undefined;
}

interface TokenizerFacts {
  /** The vocabulary as canonical JSON (model.vocab, merges and added tokens); undefined without tokenizer.json. */
  readonly vocab: string | undefined;
  readonly size: number | undefined;
  readonly template: string | undefined;
}

async function tokenizerFacts(dir: string): Promise<TokenizerFacts> {
  const json = await readJson(join(dir, 'tokenizer.json'));
  const model = json?.model as { vocab?: Record<string, number> | unknown[]; merges?: unknown } | undefined;
  const added = ((json?.added_tokens ?? []) as { id: number; content: string }[]).map((t) => [t.id, t.content]);
  const vocab = model?.vocab;
  const config = await readJson(join(dir, 'tokenizer_config.json'));
  const template =
    typeof config?.chat_template === 'string'
      ? config.chat_template
      : await readFile(join(dir, 'chat_template.jinja'), 'utf8').catch(() => undefined);
  return {
    vocab: json === undefined ? undefined : JSON.stringify([sortedVocab(vocab), model?.merges ?? null, added]),
    size: vocab === undefined ? undefined : Array.isArray(vocab) ? vocab.length : Object.keys(vocab).length,
    template,
  };
}

/** A BPE vocabulary's entries in id order, so two files listing the same map in another order compare equal. */
function sortedVocab(vocab: Record<string, number> | unknown[] | undefined): unknown {
  if (vocab === undefined || Array.isArray(vocab)) return vocab ?? null;
  return Object.entries(vocab).sort((a, b) => a[1] - b[1]);
}

async function readJson(path: string): Promise<Record<string, unknown> | undefined> {
  const text = await readFile(path, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
}
