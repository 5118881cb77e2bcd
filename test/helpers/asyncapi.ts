// Checks a Kafka record of one of the service's topics against asyncapi.yaml (its key, headers and value) and against the TypeScript models Modelina makes of it.
import { AssertionError } from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { parse } from 'yaml';
import { LOGICAL_TOPICS } from '../../platform/kafka/topics.ts';
import { asyncApiModels } from './asyncapi-models.ts';
import type { LogicalTopic } from '../../platform/kafka/topics.ts';

const ASYNCAPI_URL = new URL('../../asyncapi.yaml', import.meta.url);
const OPENAPI_URL = new URL('../../openapi.yaml', import.meta.url);
/** The channel whose messages are told apart by the `event-type` header (each message's `name`). */
const EVENTS_TOPIC = 'catalog.events.v1';

export interface KafkaRecordToCheck {
  readonly key: string | null;
  readonly value: Buffer | null;
  readonly headers: Record<string, string>;
}

interface MessageCheck {
  readonly name: string;
  readonly key: ValidateFunction | undefined;
  readonly headers: ValidateFunction | undefined;
  readonly payload: ValidateFunction;
  /** Whether the payload schema admits a tombstone (no value). */
  readonly tombstone: boolean;
}

type Json = Record<string, unknown>;

let channels: ReadonlyMap<string, readonly MessageCheck[]> | undefined;

/**
 * One validator per message part, compiled once. Both documents are added to Ajv under their file
 * URLs, so `./openapi.yaml#/…` references resolve as the AsyncAPI parser resolves them.
 */
function compileChannels(): ReadonlyMap<string, readonly MessageCheck[]> {
  const document = parse(readFileSync(ASYNCAPI_URL, 'utf8')) as Json;
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  formats.default(ajv);
  // Whole documents, not schemas: their top levels are not checked against the meta-schema.
  ajv.addSchema(parse(readFileSync(OPENAPI_URL, 'utf8')) as Json, OPENAPI_URL.href, undefined, false);
  ajv.addSchema(document, ASYNCAPI_URL.href, undefined, false);
  const at = (pointer: string): Json | undefined => pointer.slice(2).split('/').reduce<Json | undefined>(
    (node, part) => node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')] as Json | undefined, document);
  // A local reference's final target (a channel's message points into components/messages).
  const follow = (pointer: string): string => {
    const ref = at(pointer)?.$ref;
    return typeof ref === 'string' && ref.startsWith('#/') ? follow(ref) : pointer;
  };
  const compile = (pointer: string): ValidateFunction | undefined =>
    at(pointer) === undefined ? undefined : ajv.compile({ $ref: `${ASYNCAPI_URL.href}${pointer}` });
  const result = new Map<string, MessageCheck[]>();
  for (const [id, channel] of Object.entries(document.channels as Record<string, Json>)) {
    const topic = String(channel.address).replace('{prefix}', '');
    result.set(topic, Object.keys((channel.messages ?? {}) as Json).map((messageId) => {
      const message = follow(`#/channels/${id}/messages/${messageId}`);
      const payload = compile(`${message}/payload`);
      if (!payload) throw new Error(`asyncapi.yaml: message ${message} has no payload`);
      return {
        name: String(at(message)?.name ?? messageId),
        key: compile(`${message}/bindings/kafka/key`),
        headers: compile(`${message}/headers`),
        payload,
        tombstone: payload(null),
      };
    }));
  }
  return result;
}

/** The logical name of a full topic name (any prefix), when it is one of the service's topics. */
export function serviceTopic(topic: string): LogicalTopic | undefined {
  return LOGICAL_TOPICS.find((logical) => topic.endsWith(logical));
}

// Enough to see what is wrong; a body of another shape altogether would list every field.
const ERRORS_SHOWN = 6;

const errorsOf = (validate: ValidateFunction, data: unknown, what: string): string[] => {
  if (validate(data)) return [];
  const errors = validate.errors!.map((e) =>
    `${what}${e.instancePath} ${e.message}${e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : ''}`);
  const more = errors.length > ERRORS_SHOWN ? `, and ${errors.length - ERRORS_SHOWN} more` : '';
  return [`${errors.slice(0, ERRORS_SHOWN).join(', ')}${more}`];
};

/** What is wrong with the record as `message` (nothing when it matches). */
function problemsAs(message: MessageCheck, record: KafkaRecordToCheck, value: unknown): string[] {
  const problems: string[] = [];
  if (message.key) problems.push(...errorsOf(message.key, record.key, 'key'));
  if (message.headers) problems.push(...errorsOf(message.headers, record.headers, 'headers'));
  if (value === null && !message.tombstone) problems.push('a null value (tombstone), which this message does not allow');
  else problems.push(...errorsOf(message.payload, value, 'value'));
  return problems;
}

/** The documented ties between an event's headers and its body. */
function eventHeaderProblems(headers: Record<string, string>, body: unknown): string[] {
  const event = (body ?? {}) as Json;
  return ([['event-id', 'id'], ['event-type', 'type'], ['catalog-id', 'catalogId']] as const)
    .filter(([header, field]) => headers[header] !== undefined && headers[header] !== event[field])
    .map(([header, field]) => `header ${header} ${JSON.stringify(headers[header])} is not the body's ${field} ${JSON.stringify(event[field])}`);
}

/**
 * What is wrong with the record's headers and value as the types of the models Modelina made of
 * the message (test/helpers/asyncapi-models.ts): what a TypeScript reader of the topic relies on.
 */
function modelProblems(logical: LogicalTopic, messageName: string, record: KafkaRecordToCheck, value: unknown): string[] {
  const models = asyncApiModels();
  const message = models.channels[`{prefix}${logical}`]?.find((m) => m.name === messageName);
  if (!message?.payload || !message.headers) return [`Modelina made no model of ${messageName}'s ${message?.payload ? 'headers' : 'payload'}`];
  return [...models.problems(message.headers, record.headers), ...models.problems(message.payload, value)].map((p) => `as the model ${p}`);
}

/**
 * Throws an AssertionError saying what is wrong when the record (read from `topic`, a full topic
 * name) does not match asyncapi.yaml, or the types of its message's models: a message of
 * `catalog.events.v1` is chosen by its `event-type` header, on the other topics the record must
 * match one of the channel's messages.
 */
export function checkKafkaRecord(topic: string, record: KafkaRecordToCheck): void {
  channels ??= compileChannels();
  const logical = serviceTopic(topic);
  const messages = logical && channels.get(logical);
  const fail = (problems: string[]): never => {
    throw new AssertionError({ message: `${topic} record (key ${JSON.stringify(record.key)}) does not match asyncapi.yaml: ${problems.join('; ')}` });
  };
  if (!messages) return fail([`${topic} is not a channel of the document`]);
  let value: unknown = null;
  if (record.value !== null) {
    try {
      value = JSON.parse(record.value.toString('utf8'));
    } catch {
      return fail(['the value is not JSON']);
    }
  }
  if (logical === EVENTS_TOPIC) {
    const type = record.headers['event-type'];
    const message = messages.find((m) => m.name === type);
    if (!message) return fail([type === undefined ? 'no event-type header' : `no message for event-type ${JSON.stringify(type)}`]);
    const problems = [...problemsAs(message, record, value), ...eventHeaderProblems(record.headers, value)];
    if (problems.length > 0) fail(problems);
    const modelled = modelProblems(logical, message.name, record, value);
    if (modelled.length > 0) fail(modelled);
    return;
  }
  if (messages.length === 0) return fail(['the channel defines no message (the topic is reserved)']);
  // A value is judged against the messages that have one, a tombstone against those that allow it.
  const alike = messages.filter((message) => message.tombstone === (value === null));
  const attempts = (alike.length > 0 ? alike : messages).map((message) => ({ name: message.name, problems: problemsAs(message, record, value) }));
  const matched = attempts.find((attempt) => attempt.problems.length === 0);
  if (!matched) fail(attempts.length === 1 ? attempts[0]!.problems : attempts.map((a) => `as ${a.name}: ${a.problems.join(', ')}`));
  const modelled = modelProblems(logical!, matched!.name, record, value);
  if (modelled.length > 0) fail(modelled);
}
