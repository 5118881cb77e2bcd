// A TCP port free on loopback right now, for local servers started by scripts and tests.
import { createServer } from 'node:net';

function listenOn(port: number): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => done(bound));
    });
  });
}

/** A port the system picks (from its ephemeral range). */
export function freePort(): Promise<number> {
  return listenOn(0);
}

/** True when nothing listens on the port right now. */
export function portFree(port: number): Promise<boolean> {
  return listenOn(port).then(() => true, () => false);
}
