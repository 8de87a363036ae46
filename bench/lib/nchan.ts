/**
 * nchan (the nginx pub/sub module) as a same-run peer of the scale scenario: nginx with `workers`
 * worker processes, its memory store, `POST /pub/<channel>` publishing and `GET /sub/<channel>`
 * event streams (the configuration of ../shared/devbench/nchan.conf, cut to those locations).
 * Absent (no nginx, or no nchan module):
 * `nchanMissing` says why, and the scenario skips it.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, spawnTracked, stopProcess, waitForOk } from './processes'
import type { Target } from './targets'

const MODULE = '/usr/lib/nginx/modules/ngx_nchan_module.so'

/** Why nchan cannot run here, or undefined when it can. */
export function nchanMissing(): string | undefined {
  if (!Bun.which('nginx')) return 'nginx is not installed (Debian: apt-get install nginx-light libnginx-mod-nchan)'
  if (!existsSync(MODULE)) return `the nchan module ${MODULE} is absent (Debian: apt-get install libnginx-mod-nchan)`
  return undefined
}

export async function startNchan(logDir: string, workers: number): Promise<Target & { pids: () => number[] }> {
  const port = freePort()
  const prefix = join(logDir, `nchan-${workers}`)
  for (const d of ['logs', 'tmp']) mkdirSync(join(prefix, d), { recursive: true })
  writeFileSync(
    join(prefix, 'nginx.conf'),
    `load_module ${MODULE};
worker_processes ${workers};
worker_rlimit_nofile 20000;
pid nginx.pid;
error_log logs/error.log warn;
daemon off;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path tmp/body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  client_body_buffer_size 64k;
  client_max_body_size 64k;
  keepalive_requests 1000000;
  nchan_shared_memory_size 256M;
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location ~ ^/pub/([A-Za-z0-9_.-]+)$ {
      nchan_publisher http;
      nchan_channel_id $1;
      nchan_message_buffer_length 1000;
      nchan_message_timeout 1h;
    }
    location ~ ^/sub/([A-Za-z0-9_.-]+)$ {
      nchan_subscriber eventsource;
      nchan_channel_id $1;
      nchan_subscriber_first_message newest;
    }
    location = /ready { return 200; }
    location / { return 404; }
  }
}
`,
  )
  const proc = spawnTracked([Bun.which('nginx')!, '-p', prefix, '-c', join(prefix, 'nginx.conf')], {
    stdout: join(logDir, `nchan-${workers}.log`),
    stderr: join(logDir, `nchan-${workers}.err.log`),
  })
  const base = `http://127.0.0.1:${port}`
  try {
    await waitForOk(`${base}/ready`, proc)
  } catch (e) {
    await stopProcess(proc)
    throw e
  }
  /** The master and its workers (their CPU is nchan's). */
  const pids = () => {
    const r = Bun.spawnSync(['pgrep', '-P', String(proc.pid)])
    return [proc.pid, ...r.stdout.toString().split('\n').filter(Boolean).map(Number)]
  }
  return { name: `nchan ×${workers}`, base, pid: proc.pid, pids, stop: () => stopProcess(proc) }
}
