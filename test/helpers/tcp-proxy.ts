// A loopback TCP proxy whose target moves at run time, cutting every open connection when it does (as HAProxy or a cloud endpoint does when the primary moves).
import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';

export interface TcpProxy {
  /** The stable port clients use, on 127.0.0.1. */
  readonly port: number;
  /** Sends new connections to another port and cuts the open ones. */
  retarget(port: number, host?: string): void;
  /** Cuts every open connection; new ones still go through. */
  cut(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { port: number; host?: string }): Promise<TcpProxy> {
  let current = { host: target.host ?? '127.0.0.1', port: target.port };
  const open = new Set<Socket>();
  const cut = () => { for (const socket of open) socket.destroy(); };
  const server = createServer((client) => {
    const upstream = connect(current);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.once('close', () => open.delete(socket));
    }
    // Either side closing or failing closes the other: a half-open pair would leave a client waiting on nothing.
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => done());
  });
  return {
    port: (server.address() as AddressInfo).port,
    retarget(port, host = '127.0.0.1') {
      current = { host, port };
      cut();
    },
    cut,
    close: () => new Promise<void>((done) => {
      server.close(() => done());
      cut();
    }),
  };
}
