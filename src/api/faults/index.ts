import type { Server } from 'bun'
import type { Logger } from '../../lib/logger'
import type { SocketData, SocketTap } from '../realtime/socket'
import type { WebSocketHandler } from 'bun'
import { FaultControl, type FaultSettings } from './control'

export { FaultControl, type FaultSettings } from './control'

/** What the node gives the fault API: the handlers of its port (server.ts gatewayHandlers) and how it serves them. */
export interface FaultPorts {
  fetch(req: Request, server: Server<SocketData>, tap?: SocketTap): Response | Promise<Response> | undefined
  websocket: WebSocketHandler<SocketData>
  idleTimeoutSeconds: number
  maxRequestBodySize: number
  error: (e: unknown) => Response
}

/** Starts the fault control API on FAULTS_HOST:FAULTS_PORT (throws when it cannot listen). */
export function startFaults(s: FaultSettings, ports: FaultPorts, log: Logger): FaultControl {
  const { fetch, websocket, ...port } = ports
  return new FaultControl(s, { fetch, websocket }, { hostname: s.faultsHost, ...port }, log).listen()
}
