import { Elysia } from 'elysia'
import { GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import { toGatewayError } from '../http/errors'
import { respondError } from '../http/responses'
import { queryOf } from '../http/query'

/** The only global error hook and the only writer of error bodies (`toGatewayError` maps what was thrown). */
export const errorsPlugin = (log: Logger) =>
  new Elysia({ name: 'errors', normalize: false })
    .error({ GatewayError })
    .onError({ as: 'global' }, ({ code, error, request, set }) => {
      const res = respondError(request, queryOf(request), toGatewayError(code, error, log, request))
      set.status = res.status // Elysia would otherwise re-stamp an enveloped (200) error with the error's status
      return res
    })
