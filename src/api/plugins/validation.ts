import { Elysia, getSchemaValidator } from 'elysia'
import { validationError } from '../http/errors'
import { OWN_BODY } from '../http/body'

/** What this hook needs of an Elysia route (`app.routes`). */
export interface RouteEntry {
  method: string
  path: string
  hooks: { body?: unknown }
}

type Check = (body: unknown) => void

/** The part of Elysia's compiled TypeBox checker used here. */
interface Validator {
  Check(value: unknown): boolean
  Errors(value: unknown): { First(): { path: string; message: string } | undefined }
}

const OPTIONAL = Symbol.for('TypeBox.Optional')

/**
 * Request bodies are checked against their route's schema here, in a transform hook: after
 * parsing, before Elysia's own validation. A body Elysia refuses becomes a ValidationError, whose
 * constructor serializes the refused value (pretty-printed outside production, compactly in it,
 * and with a list of errors holding parts of it): for a hostile body, seconds of CPU on the one
 * event loop. A refusal here names the first problem's path and message and never serializes the
 * value, so Elysia's check only ever sees bodies that pass. Query and path parameters are flat
 * strings within the runtime's header limit (16 KiB) and are left to Elysia.
 */
export function bodyValidation(routes: () => readonly RouteEntry[]) {
  const checks = new Map<string, Check | null>()
  return new Elysia({ name: 'body-validation', normalize: false }).onTransform(
    { as: 'global' },
    ({ request, route, body }: { request: Request; route: string; body: unknown }) => {
      if (body === OWN_BODY) return // read and checked by the route itself
      const key = `${request.method} ${route}`
      let check = checks.get(key)
      if (check === undefined) checks.set(key, (check = compile(routes(), request.method, route)))
      check?.(body)
    },
  )
}

function compile(routes: readonly RouteEntry[], method: string, path: string): Check | null {
  const schema = routes.find((r) => r.method === method && r.path === path)?.hooks.body
  if (!schema || typeof schema !== 'object') return null
  const validator = getSchemaValidator(schema as never) as unknown as Validator | undefined
  if (!validator) return null
  const optional = (schema as Record<symbol, unknown>)[OPTIONAL] === 'Optional'
  return (body) => {
    // as Elysia does: an optional body that is absent or an empty object is not checked
    if (optional && (body === undefined || body === null || (typeof body === 'object' && isEmpty(body)))) return
    if (!validator.Check(body)) throw validationError('body', validator.Errors(body).First())
  }
}

const isEmpty = (o: object) => {
  for (const _ in o) return false
  return true
}
