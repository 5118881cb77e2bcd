// The api role's HTTP side (contract, handlers, router): loaded only by processes that serve requests.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bindHandlers } from '../handlers/index.ts';
import { uploadRoute } from '../handlers/imports/upload-file.ts';
import { downloadRoute } from '../handlers/media/download-stored-object.ts';
import { loadContract } from '../platform/http/contract.ts';
import type { Contract } from '../platform/http/contract.ts';
import { closeHttpServer, createHttpServer } from '../platform/http/server.ts';
import type { Services } from '../platform/http/types.ts';

export interface Api {
  readonly contract: Contract;
  /** Listens on `port` and `host`; resolves with the base address and the closer. */
  serve(services: Services, port: number, host: string): Promise<{ url: string; close: () => Promise<void> }>;
}

/** The contract and its handlers; start-up fails when they do not match. */
export async function loadApi(): Promise<Api> {
  const contract = await loadContract();
  const handlers = bindHandlers(contract);
  return {
    contract,
    async serve(services, port, host) {
      const upload = uploadRoute(services);
      const download = downloadRoute(services);
      const server = createHttpServer({
        services, handlers, extraRoutes: async (req, res, url, requestId, record) => (await upload(req, res, url, requestId, record)) || download(req, res, url, requestId, record),
      });
      await listen(server, port, host);
      const address = server.address() as AddressInfo;
      return { url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`, close: () => closeHttpServer(server) };
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
