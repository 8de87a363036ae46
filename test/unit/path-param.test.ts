import { expect, test } from 'bun:test'
import { pathParam, pathParams } from '../../src/api/http/params'
import { GatewayError } from '../../src/errors'

const ROUTE = '/channels/:channel/messages'

test("pathParam gives what pathParams gives for that name, whatever the URL's shape", () => {
  const channelOf = pathParam(ROUTE, 'channel')
  for (const url of [
    'http://h:80/channels/a/messages',
    'http://h/channels/a%20b/messages?x=1',
    'http://h/channels//messages',
    'http://h/channels/x',
    'http://h/channels/x/messages#f?y',
    'http://h/channels?x/y',
    'http://h/',
    'http://h',
  ])
    expect(channelOf(url)).toBe(pathParams(ROUTE, url).channel)
})

test('pathParam refuses a segment that is not percent-encoded UTF-8 as pathParams does', () => {
  const channelOf = pathParam(ROUTE, 'channel')
  const url = 'http://h/channels/%ED%A0%80/messages'
  expect(() => pathParams(ROUTE, url)).toThrow(GatewayError)
  expect(() => channelOf(url)).toThrow(expect.objectContaining({ code: 40010 }))
})

test('pathParam of a name the route does not have is a programming error, found at startup', () => {
  expect(() => pathParam(ROUTE, 'room')).toThrow()
})
