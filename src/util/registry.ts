import { closestName } from './did-you-mean.js';

/**
 * A name -> lazily imported component map. Built-ins and user modules register the same way,
 * so there is one path; heavy modules (tau2, sandbox) load only when a recipe names them.
 */
export class Registry<T> {
  private readonly loaders = new Map<string, () => Promise<T>>();

  constructor(readonly kind: string) {}

  register(name: string, load: () => Promise<T>): void {
    this.loaders.set(name, load);
  }

  has(name: string): boolean {
    return this.loaders.has(name);
  }

  names(): string[] {
    return [...this.loaders.keys()].sort();
  }

  /** @throws Error naming the nearest registered name; callers turn it into a located ConfigError. */
  async get(name: string): Promise<T> {
    const load = this.loaders.get(name);
    if (!load) throw new Error(this.unknownMessage(name));
    return load();
  }

  unknownMessage(name: string): string {
    const near = closestName(name, this.names());
    return `unknown ${this.kind} '${name}'${near ? ` (did you mean '${near}'?)` : ''}; known: ${this.names().join(', ')}`;
  }
}
