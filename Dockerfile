# syntax=docker/dockerfile:1
# The gateway as one self-contained executable (`bun build --compile`) on a slim Debian base.

# 1. Dependencies. The lockfile is npm's package-lock.json, which `bun install --frozen-lockfile`
#    does not read, so the exact locked tree is installed by `npm ci` in a Node image; its install
#    scripts also link the lockfile's own Bun (the `bun` package) into node_modules/.bin.
FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# 2. Build: the `build` script of package.json; Bun pinned to the version in package.json.
FROM oven/bun:1.4.5 AS build
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
RUN bun run build && ./dist/gateway --version

# 3. Runtime: the binary needs only glibc (and libstdc++, which the slim image has). Runs as an
#    unprivileged user owning the data volume.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --user-group --uid 10001 --home-dir /data --no-create-home gateway \
 && mkdir -m 700 /data && chown gateway:gateway /data
COPY --from=build /app/dist/gateway /usr/local/bin/gateway
ENV DATA_DIR=/data PORT=8080 HOST=0.0.0.0
USER gateway
VOLUME /data
EXPOSE 8080
# `gateway healthcheck` asks /health of the node this environment configures: https when
# TLS_CERT_FILE is set (its certificate is not checked), the PORT and HOST it listens on
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/gateway", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/gateway"]
