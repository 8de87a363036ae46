#!/bin/bash
# Issue 27 on a many-core machine: publishes/s of the gateway (K processes via WORKERS=K, compiled
# binary) on an M-master Redis Cluster (M = 1, 2, 4), beside nchan with 8 workers, all with the same
# wrk load: JSON publishes spread over 1,000 channels, each channel with an event stream (SUBS), so
# every publish is also delivered. CPU per publish of redis-servers and gateways.
# Usage: bench/many-cores/scale.sh [quick]   (see README.md beside it)
set -u
D=$(cd "$(dirname "$0")" && pwd); B=${DEVBENCH_CARRY:-$D/carry}
W=$(mktemp -d); mkdir -p $W/ng/logs $W/ng/tmp /var/lib/nginx/body /var/lib/nginx/proxy /var/lib/nginx/fastcgi /var/lib/nginx/uwsgi /var/lib/nginx/scgi 2>/dev/null; cd $W
export LD_LIBRARY_PATH=$B/lib
DUR=${DUR:-6}; WARM=${WARM:-2}; [ "${1:-}" = quick ] && { DUR=2; WARM=1; }
WT=${WT:-6}; WC=${WC:-400}; NCH=1000
SUBS=${SUBS:-$NCH}; SPROCS=${SPROCS:-2} # event streams (stream i on channel bench-i; 0: none) and the processes holding them
ulimit -n 200000 2>/dev/null || ulimit -n 65536
echo "cores $(nproc); $(grep -m1 'model name' /proc/cpuinfo); DUR=$DUR wrk -t$WT -c$WC"
GWS=${GWS:-gateway}; for g in $GWS; do [ -f $B/$g.xz ] && { xz -T0 -dc $B/$g.xz > $W/$g && chmod +x $W/$g; echo "$g: $($W/$g --version)"; }; done
# a name with a folder $B/<name>-bundle instead (bun build --outdir): run by the last binary of GWS as Bun
runner() { if [ -d $B/$1-bundle ]; then echo "env BUN_BE_BUN=1 $W/${GWS##* } $B/$1-bundle/main.js"; else echo $W/$1; fi; }
KEY='benchapp.root:bench-secret-0123456789'
AUTH="Basic $(printf %s "$KEY" | base64 -w0)"
BODY='{"name":"e","data":"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefgh"}'
lua() { # prefix auth name: a random channel of NCH per request
  { echo "local body = '$BODY'"; echo "local hdr = { ['Content-Type'] = 'application/json' }"
    [ -n "$2" ] && echo "hdr['Authorization'] = '$2'"
    echo "math.randomseed(os.time() + math.floor(os.clock() * 1e6))"
    echo "request = function() return wrk.format('POST', '$1' .. math.random(0, $((NCH-1))) .. '$4', hdr, body) end"; } > $W/$3.lua; }
lua /pub/bench- "" nchan ""
lua /channels/bench- "$AUTH" gw /messages
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' /proc/$p/stat 2>/dev/null || echo 0))); done; echo $t; }
HZ=$(getconf CLK_TCK)
tree() { local p=$1; echo $p; for c in $(cat /proc/$p/task/*/children 2>/dev/null); do tree $c; done; }
PIDS=(); RPIDS=(); SP=
stopall() { [ -n "$SP" ] && kill $SP 2>/dev/null; SP=; for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; sleep 0.7; for p in "${PIDS[@]}"; do pkill -9 -P $p 2>/dev/null; kill -9 $p 2>/dev/null; done; PIDS=(); }
streams() { # port path-with-{n}: SUBS event streams (streams.js, run by the last binary of GWS as Bun), not counted as server CPU
  [ "$SUBS" -gt 0 ] || return 0
  env BUN_BE_BUN=1 $W/${GWS##* } $B/streams.js $1 "$2" $SUBS $SPROCS $W/count-$1 > $W/streams-$1.log 2>&1 & SP=$!
  local k; for k in $(seq 1 50); do sleep 0.2; [ "$(delivered $1 | awk '{print $2}')" -ge "$SUBS" ] 2>/dev/null && return 0; done
  echo "streams: $(delivered $1 | awk '{print $2}') of $SUBS open at :$1"
}
delivered() { # port: deliveries, open and failed streams so far, summed over the stream processes
  [ -n "$SP" ] || { echo "0 0 0"; return; }
  rm -f $W/count-$1.*; kill -USR1 $SP 2>/dev/null; local k; for k in $(seq 1 20); do [ $(ls $W/count-$1.* 2>/dev/null | wc -l) -ge $SPROCS ] && break; sleep 0.05; done
  cat $W/count-$1.* 2>/dev/null | awk '{d+=$1; o+=$2; f+=$3} END {printf "%d %d %d\n", d, o, f}'
}
stopredis() { for p in "${RPIDS[@]}"; do kill -9 $p 2>/dev/null; done; RPIDS=(); sleep 0.3; }
waitup() { for i in $(seq 1 150); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer at $1"; return 1; }
measure() { # label url script servers-root-pids...
  local label=$1 url=$2 s=$3; shift 3
  $B/bin/wrk -t$WT -c$WC -d${WARM}s --timeout 5s -s $W/$s.lua "$url" > /dev/null 2>&1
  local sp=(); for r in "$@"; do sp+=($(tree $r)); done
  local port=${url##*:}; port=${port%/}
  local d0=$(delivered $port | awk '{print $1}')
  local r0=$(ticks "${RPIDS[@]}") g0=$(ticks "${sp[@]}") t0=$(date +%s.%N)
  local out; out=$($B/bin/wrk -t$WT -c$WC -d${DUR}s --timeout 5s -s $W/$s.lua "$url" 2>&1)
  local r1=$(ticks "${RPIDS[@]}") g1=$(ticks "${sp[@]}") t1=$(date +%s.%N)
  local ds; ds=$(delivered $port); local d1=$(echo $ds | awk '{print $1}') sopen=$(echo $ds | awk '{print $2}')
  local rps=$(echo "$out" | awk '/Requests\/sec/ {print int($2)}'); local non=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
  local se=$(echo "$out" | grep -o 'Socket errors.*')
  awk -v l="$label" -v rps=${rps:-0} -v non=${non:-0} -v r=$((r1-r0)) -v g=$((g1-g0)) -v hz=$HZ -v t0=$t0 -v t1=$t1 -v se="$se" -v dd=$((d1-d0)) -v so=$sopen -v subs=$SUBS 'BEGIN { el=t1-t0; n=rps*el; if (n<1) n=1;
    st = subs > 0 ? sprintf(" streams=%d/%d deliveries_per_s=%d", so, subs, dd/el) : "";
    printf "RESULT %s rps=%d non2xx=%s redis_cpu=%.0f%% server_cpu=%.0f%% redis_us_per_pub=%.1f server_us_per_pub=%.1f%s %s\n", l, rps, non, r/hz/el*100, g/hz/el*100, r/hz/n*1e6, g/hz/n*1e6, st, se }' | tee -a "${OUT:-/dev/null}${OUT:+/results.txt}"
}
cluster() { # M masters on ports 17001..
  local m=$1 i p k ok base=17000
  for i in $(seq 1 $m); do p=$((base+i)); mkdir -p $W/rc-$m-$i
    $B/bin/redis-server --port $p --bind 127.0.0.1 --cluster-enabled yes --cluster-announce-ip 127.0.0.1 --cluster-config-file $W/rc-$m-$i/nodes.conf \
      --save '' --appendonly no --protected-mode no --dir $W/rc-$m-$i > $W/redis-$m-$i.log 2>&1 & RPIDS+=($!); disown $!
  done
  for i in $(seq 1 $m); do p=$((base+i)); for k in $(seq 1 50); do [ "$($B/bin/redis-cli -p $p PING 2>/dev/null)" = PONG ] && break; sleep 0.1; done; done
  for i in $(seq 1 $m); do p=$((base+i)); $B/bin/redis-cli -p $p CLUSTER ADDSLOTSRANGE $(( (i-1)*16384/m )) $(( i*16384/m - 1 )) > /dev/null; done
  for i in $(seq 2 $m); do $B/bin/redis-cli -p $((base+1)) CLUSTER MEET 127.0.0.1 $((base+i)) > /dev/null; done
  for k in $(seq 1 100); do ok=1; for i in $(seq 1 $m); do $B/bin/redis-cli -p $((base+i)) CLUSTER INFO | grep -q cluster_state:ok || ok=0; done; [ $ok = 1 ] && break; sleep 0.2; done
  CURL=$(for i in $(seq 1 $m); do printf 'redis://127.0.0.1:%d,' $((base+i)); done); CURL=${CURL%,}
}
gwcluster() { # port K [binary]
  local bin=${3:-gateway}
  env PORT=$1 HOST=127.0.0.1 WORKERS=$2 DATA_DIR=$W/data-$1 BOOTSTRAP_KEY=$KEY BOOTSTRAP_ACCESS_TOKEN=tok-0123456789 RATE_LIMITS=off LOG_LEVEL=warn \
    REDIS_URL=$CURL REDIS_CLUSTER=true REDIS_PREFIX=b$1: $(runner $bin) > $W/gw-$1.log 2>&1 & PIDS+=($!)
  waitup http://127.0.0.1:$1/health; sleep 2
  local c; c=$(curl -s -o /dev/null -w '%{http_code}' -u "$KEY" -H 'content-type: application/json' -d "$BODY" http://127.0.0.1:$1/channels/probe/messages); [ "$c" = 201 ] || echo "probe publish answered $c"
}
nchan() { # workers port
  sed -e "s/^worker_processes.*/worker_processes $1;/" -e "s#load_module .*#load_module $B/mod/ngx_nchan_module.so;#" \
      -e "s/listen 127.0.0.1:18080/listen 127.0.0.1:$2/" -e 's/worker_rlimit_nofile 20000/worker_rlimit_nofile 100000/' $D/nchan.conf > $W/ng/nginx.conf
  $B/bin/nginx -p $W/ng -c $W/ng/nginx.conf -g 'daemon off;' > $W/ng/out.log 2>&1 & PIDS+=($!); sleep 0.7
}
K=${K:-8}; P=18300
for round in $(seq 1 ${ROUNDS:-2}); do
  P=$((P+1)); nchan 8 $P; streams $P "/sub/bench-{n}"; measure "r$round nchan-8workers" http://127.0.0.1:$P/ nchan "${PIDS[@]}"; stopall
  for m in ${SHARDS-1 2 4}; do for g in $GWS; do
    P=$((P+1)); cluster $m; gwcluster $P $K $g; streams $P "/sse?v=1.2&key=$KEY&channels=bench-{n}"
    measure "r$round $g-${K}proc-${m}shard" http://127.0.0.1:$P/ gw "${PIDS[@]}"; stopall; stopredis
  done; done
done
# the Redis layer alone (broker-load.js: P processes of in-process publishers, no HTTP) on each M
broker() { # round M
  local r0 t0 out r1 t1; r0=$(ticks "${RPIDS[@]}"); t0=$(date +%s.%N)
  out=$(env BUN_BE_BUN=1 $W/${GWS##* } $B/broker-load.js $CURL $BROKER_PROCS ${BROKER_PUBLISHERS:-256} $DUR 2>&1 | tail -1)
  r1=$(ticks "${RPIDS[@]}"); t1=$(date +%s.%N)
  local rps=${out#LOAD publishes/s=}
  awk -v l="r$1 broker-${BROKER_PROCS}proc-$2shard" -v rps=${rps:-0} -v r=$((r1-r0)) -v hz=$HZ -v t0=$t0 -v t1=$t1 -v out="$out" 'BEGIN { el=t1-t0;
    printf "RESULT %s rps=%d redis_cpu=%.0f%% (over the run, its warm-up second included) %s\n", l, rps, r/hz/el*100, (out ~ /^LOAD/ ? "" : out) }' | tee -a "${OUT:-/dev/null}${OUT:+/results.txt}"
}
if [ -n "${BROKER_PROCS:-}" ]; then for round in $(seq 1 ${BROKER_ROUNDS:-${ROUNDS:-2}}); do for m in ${SHARDS-1 2 4}; do
  cluster $m; broker $round $m; stopredis; done; done; fi
if [ -n "${EXTRA:-}" ]; then for spec in $EXTRA; do k=${spec%x*}; m=${spec#*x}
  g=${GWS##* }; P=$((P+1)); cluster $m; gwcluster $P $k $g; streams $P "/sse?v=1.2&key=$KEY&channels=bench-{n}"; measure "$g-${k}proc-${m}shard" http://127.0.0.1:$P/ gw "${PIDS[@]}"; stopall; stopredis; done; fi
grep -il "error\|fatal" $W/gw-*.log | head -3 | while read f; do echo "--- $f"; tail -5 $f; done
[ -n "${OUT:-}" ] && cp $W/*.log $OUT/ 2>/dev/null
echo done
