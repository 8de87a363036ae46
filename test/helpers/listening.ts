import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/** Whether process `pid` holds a TCP socket listening on `port` (its fds against /proc/net/tcp). */
export function listens(pid: number, port: number): boolean {
  const inodes = new Set<string>()
  let fds: string[]
  try {
    fds = readdirSync(`/proc/${pid}/fd`)
  } catch {
    return false
  }
  for (const fd of fds) {
    const m = /^socket:\[(\d+)\]$/.exec(link(`/proc/${pid}/fd/${fd}`))
    if (m) inodes.add(m[1]!)
  }
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .some((line) => {
      const f = line.trim().split(/\s+/)
      return f[1]?.endsWith(hexPort) && f[3] === '0A' && inodes.has(f[9]!)
    })
}

/** An fd's link target, or '' when the fd was closed between listing and reading. */
function link(path: string): string {
  try {
    return readlinkSync(path, { encoding: 'utf8' })
  } catch {
    return ''
  }
}
