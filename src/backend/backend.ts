import type { CorePorts } from '../core'

/**
 * What a backend gives a node: every port the core is built on (core/index.ts `CorePorts`), and
 * the close of its connections and files. The embedded store (memory + SQLite) and Redis each make
 * one; backend/index.ts picks which.
 */
export interface Backend extends CorePorts {
  close(): Promise<void>
}
