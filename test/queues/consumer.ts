import { connect, type ChannelModel, type ConsumeMessage } from 'amqplib'

/**
 * A consumer (manual acks) of a queue: what it receives is in `got` as it arrives. Its connection
 * is added to `open`, for the test to close.
 */
export async function consume(uri: string, queueName: string, open: ChannelModel[]) {
  const conn = await connect(uri)
  open.push(conn)
  conn.on('error', () => {})
  const ch = await conn.createChannel()
  ch.on('error', () => {})
  const got: ConsumeMessage[] = []
  await ch.consume(queueName, (m) => m && got.push(m), { noAck: false })
  return { ch, got, conn }
}
