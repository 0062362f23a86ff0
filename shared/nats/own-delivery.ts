import type { JsMsg } from '@nats-io/jetstream';

/**
 * Whether JetStream delivered `m` for this pull: by consumer `consumer` of stream `stream`, on
 * `subject` (a filter subject, or a predicate for a consumer that reads several). JetStream
 * delivers a pulled message to whatever reply subject the pull names, so another agent that can
 * guess a pull's inbox can aim its own deliveries there: such a message says, in its `$JS.ACK.…`
 * reply and its first subject, which stream and consumer it really came from. One that is not
 * this pull's is neither acted on nor acknowledged.
 */
export function ownDelivery(m: JsMsg, stream: string, consumer: string, subject: string | ((subject: string) => boolean)): boolean {
  let info: JsMsg['info'];
  try {
    info = m.info;
  } catch {
    return false;
  }
  return info.stream === stream && info.consumer === consumer && (typeof subject === 'string' ? m.subject === subject : subject(m.subject));
}
