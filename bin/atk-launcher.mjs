// atk's process launcher: a small Node process that starts atk's short-lived children (external agents,
// sandboxed programs, reward commands) on its behalf. Node starts a child with fork(), which copies the
// page tables of the whole caller and write-protects its memory: from a 360 MB atk that is ~7 ms of
// blocked event loop per child and a page fault on every heap page atk writes next. Forked from this
// ~40 MB process instead, it costs atk one message. Started by src/util/launcher.ts; speaks over the
// IPC channel (advanced serialisation, so output chunks travel as bytes):
//   in:  {t:'spawn', id, file, args, options, extraPipe}  {t:'stdin', id, data?, end?}  {t:'kill', id, signal, group}
//   out: {t:'spawned', id, pid}  {t:'data', id, fd, chunk}  {t:'failed', id, message, code}  {t:'exit', id, code, signal}
// When atk goes away (the channel closes, whatever killed it), every child it left is killed with its group.
import { spawn } from 'node:child_process';

/** Live children by id: {child, detached}. */
const children = new Map();

function send(message) {
  if (process.connected) process.send(message);
}

function signal(entry, name, group) {
  const { child, detached } = entry;
  try {
    if (group && detached && child.pid !== undefined) process.kill(-child.pid, name);
    else child.kill(name);
  } catch {
    // already gone
  }
}

function start({ id, file, args, options, extraPipe }) {
  let child;
  try {
    child = spawn(file, args, {
      ...options,
      stdio: extraPipe ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
    });
  } catch (error) {
    send({ t: 'failed', id, message: error.message, code: error.code });
    return;
  }
  const entry = { child, detached: options.detached === true };
  children.set(id, entry);
  let started = false;
  child.once('spawn', () => {
    started = true;
    send({ t: 'spawned', id, pid: child.pid });
  });
  // Only a failure to start is reported: later errors (a signal to a dead child) change nothing.
  child.on('error', (error) => {
    if (!started) send({ t: 'failed', id, message: error.message, code: error.code });
  });
  child.stdin.on('error', () => undefined); // a program may exit without reading its input
  child.stdio.forEach((stream, fd) => {
    if (fd > 0 && stream) stream.on('data', (chunk) => send({ t: 'data', id, fd, chunk }));
  });
  // 'close' comes after the exit and the end of every output stream, so atk has all the output first.
  child.once('close', (code, name) => {
    children.delete(id);
    send({ t: 'exit', id, code, signal: name });
  });
}

process.on('message', (message) => {
  if (message.t === 'spawn') return start(message);
  const entry = children.get(message.id);
  if (!entry) return;
  if (message.t === 'stdin') {
    if (message.data !== undefined) entry.child.stdin.write(message.data);
    if (message.end) entry.child.stdin.end();
  } else if (message.t === 'kill') signal(entry, message.signal, message.group);
});

process.on('disconnect', () => {
  for (const entry of children.values()) signal(entry, 'SIGKILL', true);
  process.exit(0);
});
