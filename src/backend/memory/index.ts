import type { Clock } from '../../core/ports'
import type { Backend } from '../backend'
import { MemoryBroker, type MemoryBrokerSettings } from './broker'
import { SqliteChatStore } from './chat-store'
import { SqliteAnnotationStore } from './annotation-store'
import { SqliteControlStore } from './control-store'
import { SqliteMessageLog } from './message-log'
import { RingSnapshot } from './ring-snapshot'
import { MemoryMarkStore } from './mark-store'
import { MemoryNonceStore } from './nonce-store'
import { SqliteObjectStore } from './object-store'
import { SqliteLiveObjectStore } from './live-object-store'
import { MemoryPresenceStore } from './presence-store'
import { SqlitePushStore } from './push-store'
import { MemoryRateLimitStore } from './rate-limit-store'
import { MemoryActiveChannelStore } from './active-channel-store'
import { SqliteQueueStore } from './queue-store'
import { SqliteRevocationStore } from './revocation-store'
import { openDatabase } from './sqlite'
import { MemoryStatsStore } from './stats-store'
import { SqliteVersionStore } from './version-store'

export type { MemoryBrokerSettings }

/** The embedded single-node backend: memory plus one SQLite file in `dataDir`. */
export function createMemoryBackend(s: MemoryBrokerSettings & { dataDir: string }, clock: Clock): Backend {
  const db = openDatabase(s.dataDir)
  const limits = new MemoryRateLimitStore()
  const broker = new MemoryBroker(new SqliteMessageLog(db), clock, s, limits, new RingSnapshot(db))
  const control = new SqliteControlStore(db)
  const objects = new SqliteObjectStore(db, clock, { historyTtlMs: s.persistedHistoryTtlMs })
  const presence = new MemoryPresenceStore(clock, s)
  return {
    kind: 'memory',
    broker,
    syncAppend: broker,
    control,
    presence,
    stats: new MemoryStatsStore(clock),
    nonces: new MemoryNonceStore(clock),
    marks: new MemoryMarkStore(clock),
    revocations: new SqliteRevocationStore(db, clock),
    limits,
    queues: new SqliteQueueStore(db),
    objects,
    liveObjects: new SqliteLiveObjectStore(db, broker, clock),
    versions: new SqliteVersionStore(db, clock, s.persistedHistoryTtlMs),
    chat: new SqliteChatStore(db, s.persistedHistoryTtlMs),
    annotations: new SqliteAnnotationStore(db, s.persistedHistoryTtlMs),
    push: new SqlitePushStore(db),
    activeChannels: new MemoryActiveChannelStore(),
    async close() {
      await broker.close()
      presence.close()
      await objects.close()
      db.close()
    },
  }
}
