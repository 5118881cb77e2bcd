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

// Handed to a server that binds it later, so chosen below the system's ephemeral range (32768 and
// up on Linux), from which every outgoing connection and every `listen(0)` draws: none of those
// can take it in between. The Kafka helpers pick their pairs from the same range.
const FIRST = 20_000;
const COUNT = 12_000;

/** A port free now, outside the ephemeral range. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = FIRST + Math.floor(Math.random() * COUNT);
    if (await portFree(port)) return port;
  }
  throw new Error(`no free port between ${FIRST} and ${FIRST + COUNT}`);
}

/** True when nothing listens on the port right now. */
export function portFree(port: number): Promise<boolean> {
  return listenOn(port).then(() => true, () => false);
}
