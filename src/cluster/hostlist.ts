/**
 * Slurm hostlist expressions (`n[1-3],m4`, `gpu[01-02]-ib`, `r[1-2]n[1,3]`) expanded into host names
 * in Slurm's order, as `scontrol show hostnames` prints them, without needing Slurm installed.
 */
import { InputError } from '../errors/index.js';

/**
 * Expands a hostlist into its host names. Ranges keep zero padding (`n[08-10]` -> n08, n09, n10);
 * several bracket groups in one name expand as a cartesian product, left to right.
 * @throws InputError on an unbalanced bracket or a malformed range.
 */
export function expandHostlist(hostlist: string): string[] {
  return splitTopLevel(hostlist.trim())
    .filter((part) => part !== '')
    .flatMap((part) => expandOne(part, hostlist));
}

/** Splits on commas outside brackets. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '[') depth++;
    else if (text[i] === ']') depth--;
    else if (text[i] === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

function expandOne(name: string, whole: string): string[] {
  const open = name.indexOf('[');
  if (open < 0) {
    if (name.includes(']')) throw malformed(whole, `unbalanced ] in ${name}`);
    return [name];
  }
  const close = name.indexOf(']', open);
  if (close < 0) throw malformed(whole, `unclosed [ in ${name}`);
  const prefix = name.slice(0, open);
  const rest = expandOne(name.slice(close + 1), whole);
  return rangeValues(name.slice(open + 1, close), whole).flatMap((value) =>
    rest.map((suffix) => `${prefix}${value}${suffix}`),
  );
}

function rangeValues(ranges: string, whole: string): string[] {
  return ranges.split(',').flatMap((range) => {
    const match = /^(\d+)(?:-(\d+))?$/.exec(range.trim());
    if (!match) throw malformed(whole, `bad range ${range}`);
    const [, from, to = from] = match as unknown as [string, string, string | undefined];
    const low = Number(from);
    const high = Number(to);
    if (high < low) throw malformed(whole, `range ${range} runs backwards`);
    const width = from.length;
    return Array.from({ length: high - low + 1 }, (_, i) => String(low + i).padStart(width, '0'));
  });
}

function malformed(hostlist: string, why: string): InputError {
  return new InputError(`hostlist ${JSON.stringify(hostlist)}: ${why}`, {
    hint: 'write it as Slurm does, e.g. n[1-3],m4',
  });
}
