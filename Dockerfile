# syntax=docker/dockerfile:1
# The catalog service image: Node 24 runs the TypeScript sources unbuilt (native type stripping).
# One image, two roles: `ROLE=api` serves HTTP, `ROLE=consumers` runs the Kafka consumers (compose.yaml).
FROM node:24-slim

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080

WORKDIR /app

# Runtime dependencies only. The `node` and `deno` dev packages (the local toolchain), tsc, Redocly
# and oazapfts are not needed: the image's own Node 24 strips types, nothing is built.
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm install --omit=dev --no-audit --no-fund

# Sources stay root-owned and read-only for the service; only the data folder is writable
# (local mail, the local storage driver, a generated signing secret when none is given).
COPY . .
RUN mkdir -p /app/.data && chown node:node /app/.data

USER node
EXPOSE 8080

# The service handles SIGTERM itself (drains requests, commits consumer offsets, exits 0);
# compose runs it under `init: true` so a stray child process is reaped too.
CMD ["node", "cli/main.ts", "serve"]
