#!/bin/bash
# Packs what scale.sh needs on a machine without package registries: the compiled gateway (xz),
# wrk, redis-server, nginx with the nchan module, and their shared libraries (Debian bookworm).
# Usage, from the project checkout: bash bench/many-cores/pack.sh OUTDIR   (about 55 MB)
set -eu
out=${1:?usage: pack.sh OUTDIR}
command -v wrk >/dev/null && command -v redis-cli >/dev/null && command -v nginx >/dev/null && [ -f /usr/lib/nginx/modules/ngx_nchan_module.so ] ||
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx-light libnginx-mod-nchan redis-server redis-tools >/dev/null; }
mkdir -p "$out/bin" "$out/lib" "$out/mod"
npm run --silent build
xz -T0 -6 -c dist/gateway > "$out/gateway.xz"
# the Redis layer's load generator (scale.sh BROKER_PROCS=P), one file the compiled gateway runs as Bun
node_modules/.bin/bun build --target=bun --minify --external msgpackr-extract bench/many-cores/broker-load.ts --outfile "$out/broker-load.js" >/dev/null
# the event streams of every run (scale.sh SUBS), run the same way
node_modules/.bin/bun build --target=bun --minify bench/many-cores/streams.ts --outfile "$out/streams.js" >/dev/null
cp /usr/bin/wrk /usr/bin/redis-server /usr/bin/redis-cli /usr/sbin/nginx "$out/bin/"
cp /usr/lib/nginx/modules/ngx_nchan_module.so "$out/mod/"
for f in "$out"/bin/* "$out"/mod/*; do
  ldd "$f" | awk '/=> \// {print $3}' | grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so' || true
done | sort -u | while read -r l; do cp -L "$l" "$out/lib/"; done
du -sh "$out"
