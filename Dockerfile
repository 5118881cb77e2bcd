# The catalog service image: Node 24 runs the TypeScript sources unbuilt (native type stripping).
# One image, two roles: `ROLE=api` serves HTTP, `ROLE=consumers` runs the Kafka consumers (compose.yaml).
# NODE_IMAGE: any Node 24 image with npm and a `node` user (uid 1000), as the official one has.
ARG NODE_IMAGE=node:24-slim

# Runtime dependencies only: the `node` and `deno` dev packages (the local toolchain), tsc, Redocly,
# oazapfts and the test tools stay out; only the console is built (esbuild), the image's own Node strips types.
FROM ${NODE_IMAGE} AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
# npm install, not npm ci: the lockfile cannot list deno's other-platform binaries (see .ci/run).
# --ignore-scripts: `prepare` builds the console from sources this stage has not copied (done below);
# the one install step the service needs, patches/ applied to its dependencies, runs on its own.
RUN npm install --omit=dev --ignore-scripts --no-audit --no-fund && node_modules/.bin/patch-package && npm cache clean --force

FROM ${NODE_IMAGE}
# MALLOC_ARENA_MAX: two glibc malloc arenas rather than up to 8 a core keep sharp's peak RSS down
# (docs/operations.md, Memory).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
# Sources stay root-owned and read-only for the service; only the data folder is writable
# (local mail, the local storage driver, a generated signing secret when none is given).
COPY . .
# The browser console's bundle (console/dist), built as `npm install` builds it outside the image.
RUN node scripts/build-console.ts && mkdir -p /app/.data && chown node:node /app/.data
USER node
# The API (api and all roles) and the operations port (/metrics, /healthz, /readyz; every role).
EXPOSE 8080 9464
# Readiness (Postgres and Kafka answer) on the operations port, which every role serves.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=6 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.OPS_PORT || 9464) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The service handles SIGTERM itself (drains requests, commits consumer offsets, exits 0);
# compose runs it under `init: true` so a stray child process is reaped too.
CMD ["node", "cli/main.ts", "serve"]
