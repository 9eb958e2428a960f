import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError } from '../../errors/index.js';
import { pyDumps, type FloatField } from './py-json.js';

export type Tau2Domain = 'airline' | 'retail';
export const TAU2_DOMAINS: readonly Tau2Domain[] = ['airline', 'retail'];

/** One JSON record of a table (a user, an order, a flight ...). */
export type DbRecord = Record<string, unknown>;
/** The shared, frozen database a domain's episodes start from: table -> key -> record. */
export type BaseTables = Readonly<Record<string, Readonly<Record<string, DbRecord>>>>;

/** How a domain's data model types its fields, for Python-identical dumps and hashes. */
export interface DomainModel {
  /** A tau2 domain (its db.json is under `<dataDir>/tau2/domains/<domain>/`) or a domain atk generates. */
  readonly domain: string;
  readonly tables: readonly string[];
  readonly isFloat: FloatField;
  /** Optional fields pydantic dumps as `null` when unset, per table, in declaration order. */
  readonly optionalFields: Readonly<Record<string, readonly string[]>>;
}

const loaded = new Map<string, Promise<BaseTables>>();

/**
 * Load `<dataDir>/tau2/domains/<domain>/db.json` once per process and freeze it: every episode
 * shares it read-only and writes into its own {@link EpisodeDb} overlay.
 * @throws InputError when the file is missing or malformed.
 */
export function loadBaseDb(model: DomainModel, dataDir: string): Promise<BaseTables> {
  const path = join(dataDir, 'tau2', 'domains', model.domain, 'db.json');
  let pending = loaded.get(path);
  if (!pending) {
    pending = readBase(path, model);
    pending.catch(() => loaded.delete(path));
    loaded.set(path, pending);
  }
  return pending;
}

async function readBase(path: string, model: DomainModel): Promise<BaseTables> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new InputError(
      `cannot read tau2 database ${path}: ${error instanceof Error ? error.message : String(error)}`,
      {
        hint: 'set ATK_DATA_DIR to the folder holding tau2/domains/<domain>/db.json',
        cause: error,
      },
    );
  }
  const tables: Record<string, Record<string, DbRecord>> = {};
  for (const table of model.tables) {
    const rows = (raw as Record<string, unknown>)[table];
    if (typeof rows !== 'object' || rows === null) throw new InputError(`${path}: table '${table}' is missing`);
    const optional = model.optionalFields[table] ?? [];
    for (const record of Object.values(rows as Record<string, DbRecord>)) {
      for (const field of optional) if (!(field in record)) record[field] = null;
    }
    tables[table] = rows as Record<string, DbRecord>;
  }
  return deepFreeze(tables);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/**
 * One episode's database: the frozen base plus a copy-on-write overlay of the records this
 * episode changed or added. Creating one costs a few small Maps, so 64 concurrent episodes of
 * the 7 MB airline database share one copy of it. Tools read with {@link get} and must call
 * {@link edit} before changing a record (the base is frozen, so forgetting throws).
 */
export class EpisodeDb {
  private readonly changed = new Map<string, Map<string, DbRecord>>();

  constructor(
    readonly model: DomainModel,
    readonly base: BaseTables,
  ) {}

  get(table: string, key: string): DbRecord | undefined {
    return this.changed.get(table)?.get(key) ?? this.base[table]?.[key];
  }

  has(table: string, key: string): boolean {
    return this.get(table, key) !== undefined;
  }

  /** A writable copy of the record, made on first edit and kept for the episode. */
  edit(table: string, key: string): DbRecord {
    const overlay = this.overlay(table);
    let record = overlay.get(key);
    if (!record) {
      const original = this.base[table]?.[key];
      if (!original) throw new Error(`no ${table} record '${key}'`);
      record = structuredClone(original) as DbRecord;
      overlay.set(key, record);
    }
    return record;
  }

  /** Add a new record (appended after the base records, as a Python dict insert). */
  insert(table: string, key: string, record: DbRecord): void {
    this.overlay(table).set(key, record);
  }

  /** Keys in Python dict order: base keys, then keys this episode added. */
  *keys(table: string): Generator<string> {
    const base = this.base[table] ?? {};
    yield* Object.keys(base);
    for (const key of this.changed.get(table)?.keys() ?? []) if (!(key in base)) yield key;
  }

  *values(table: string): Generator<DbRecord> {
    for (const key of this.keys(table)) yield this.get(table, key)!;
  }

  /** Keys of the records this episode edited or added. */
  touched(table: string): readonly string[] {
    return [...(this.changed.get(table)?.keys() ?? [])];
  }

  /** A record as Python would dump it, for a tool result. */
  dump(value: unknown): string {
    return pyDumps(value, { isFloat: this.model.isFloat });
  }

  private overlay(table: string): Map<string, DbRecord> {
    let overlay = this.changed.get(table);
    if (!overlay) {
      overlay = new Map();
      this.changed.set(table, overlay);
    }
    return overlay;
  }
}

/** The canonical text of one record: sorted keys, typed numbers (`json.dumps(sort_keys=True)`). */
export function canonicalRecord(model: DomainModel, record: unknown): string {
  return pyDumps(record, { sortKeys: true, isFloat: model.isFloat });
}

/**
 * The reference's database hash: sha256 of `json.dumps(db.model_dump(), sort_keys=True)`, with
 * pydantic's typing (float fields print `100.0`, unset optional fields print `null`). Streams
 * record by record so the 7 MB airline database never becomes one string.
 */
export function dbHash(db: EpisodeDb): string {
  const hash = createHash('sha256');
  const tables = [...db.model.tables].sort();
  hash.update('{');
  tables.forEach((table, t) => {
    hash.update(`${t > 0 ? ', ' : ''}${JSON.stringify(table)}: {`);
    [...db.keys(table)].sort().forEach((key, k) => {
      hash.update(`${k > 0 ? ', ' : ''}${pyDumps(key)}: ${canonicalRecord(db.model, db.get(table, key))}`);
    });
    hash.update('}');
  });
  hash.update('}');
  return hash.digest('hex');
}

/**
 * Whether two episode databases over the same base hold the same state, i.e. whether their
 * {@link dbHash}es are equal. Only records either side touched can differ, so only those are
 * compared: microseconds instead of two full hashes of the base.
 */
export function sameState(a: EpisodeDb, b: EpisodeDb): boolean {
  if (a.base !== b.base) return dbHash(a) === dbHash(b);
  for (const table of a.model.tables) {
    const keys = new Set([...a.touched(table), ...b.touched(table)]);
    for (const key of keys) {
      const left = a.get(table, key);
      const right = b.get(table, key);
      if (left === right) continue;
      if (left === undefined || right === undefined) return false;
      if (canonicalRecord(a.model, left) !== canonicalRecord(a.model, right)) return false;
    }
  }
  return true;
}
