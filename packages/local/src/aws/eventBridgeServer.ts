/**
 * A strict local stand-in for Amazon EventBridge's `PutEvents`, for the outbox relay's EventBridge
 * destination: no EventBridge emulator on npm runs on Node.js without Docker (LocalStack needs
 * Docker; `serverless-offline-aws-eventbridge` runs only inside the Serverless Framework), so this
 * small HTTP server speaks the AWS JSON 1.1 protocol (`X-Amz-Target: AWSEvents.<Operation>`) that the
 * real `@aws-sdk/client-eventbridge` talks to through its `endpoint`. It keeps the events each bus
 * accepted, so a test or a local run can count what was published, and it can fail chosen entries
 * (`failEntries`) to exercise partial failures.
 *
 * `PutEvents` rules it enforces (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html,
 * https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEventsRequestEntry.html,
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html):
 *
 * - 1 to 10 entries per request, else a `ValidationException` for the whole request;
 * - the entries' total size, counted as AWS counts it (14 bytes for `Time`, the UTF-8 bytes of
 *   `Source`, `DetailType`, `Detail` and each resource), at most 256 KiB, else a
 *   `ValidationException` for the whole request;
 * - `Source`, `DetailType` and `Detail` required: an entry without one of them fails alone
 *   (`InvalidArgument`), and a request in which no entry has all three fails as a whole;
 * - `Detail` a valid JSON object (`MalformedDetail`), `DetailType` at most 128 characters and
 *   `Source` at most 256 (`InvalidArgument`), a `Source` starting with `aws.` refused
 *   (`NotAuthorizedForSourceException`);
 * - `EventBusName` (a name or an ARN; `default` when left out) must name a bus that exists in this
 *   server's region and account (an entry for another fails alone, `ResourceNotFoundException`).
 *
 * Besides `PutEvents`: `CreateEventBus`, `DescribeEventBus`, `DeleteEventBus`, `ListEventBuses`
 * (names `[/\.\-_A-Za-z0-9]+`, 1 to 256 characters). Not emulated: rules, targets, archives,
 * quotas, signatures (any credentials are accepted).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loopbackHost } from '../freePort.js';
import { localRegion } from '../localClientConfig.js';

/** The most entries one `PutEvents` request takes. */
export const PUT_EVENTS_MAX_ENTRIES = 10;
/** The most bytes the entries of one `PutEvents` request may have together (256 KiB). */
export const PUT_EVENTS_MAX_REQUEST_BYTES = 262_144;

/** One `PutEvents` entry as the server received it (the JSON 1.1 shape: `Time` in epoch seconds). */
export interface ReceivedPutEventsEntry {
  /** The event's source. */
  readonly Source?: string;
  /** The event's detail type. */
  readonly DetailType?: string;
  /** The event's detail: JSON text. */
  readonly Detail?: string;
  /** The bus, by name or ARN (`default` when absent). */
  readonly EventBusName?: string;
  /** ARNs the event concerns. */
  readonly Resources?: readonly string[];
  /** The event's time, in epoch **seconds** (the JSON 1.1 protocol's timestamps). */
  readonly Time?: number;
  /** An X-Ray trace header. */
  readonly TraceHeader?: string;
}

/** An event a bus accepted, in the shape EventBridge delivers to its targets. */
export interface LocalEventBridgeEvent {
  /** Always `'0'`. */
  readonly version: '0';
  /** The id EventBridge assigned (a UUID); it is the `EventId` of the `PutEvents` result. */
  readonly id: string;
  /** The entry's `DetailType`. */
  readonly 'detail-type': string;
  /** The entry's `Source`. */
  readonly source: string;
  /** The server's account id. */
  readonly account: string;
  /** ISO 8601 without fractions, as EventBridge writes it: the entry's `Time`, else the time it was received. */
  readonly time: string;
  /** The server's region. */
  readonly region: string;
  /** The entry's `Resources` (empty when it had none). */
  readonly resources: readonly string[];
  /** The entry's `Detail`, parsed. */
  readonly detail: Record<string, unknown>;
  /** The entry's `TraceHeader`, when it had one (EventBridge passes it on to the targets' traces). */
  readonly traceHeader?: string;
}

/** A rule that fails chosen entries of `PutEvents` requests (after they passed validation). */
export interface FailEntriesRule {
  /** The entry's `ErrorCode`, e.g. `ThrottlingException`, `InternalFailure` (retryable) or `AccessDeniedException`. */
  readonly errorCode: string;
  /** @default `injected ${errorCode}` */
  readonly errorMessage?: string;
  /** Which entries fail. @default every entry */
  readonly match?: (entry: ReceivedPutEventsEntry) => boolean;
  /** How many matching entries fail before the rule is spent. @default 1 */
  readonly times?: number;
}

/** What one `PutEvents` request did. */
export interface PutEventsCall {
  /** Entries in the request. */
  readonly entries: number;
  /** Entries that failed (`FailedEntryCount`), or all of them when the request failed as a whole. */
  readonly failed: number;
  /** The error of a request that failed as a whole. */
  readonly requestError?: string;
}

/** A running local EventBridge. */
export interface LocalEventBridge {
  /** `http://127.0.0.1:<port>`: the `endpoint` of an `EventBridgeClient`. */
  readonly endpoint: string;
  /** The region of its ARNs and events (give the client the same). */
  readonly region: string;
  /** The account of its ARNs and events. */
  readonly accountId: string;
  /** The ARN of the bus named `name` (whether or not it exists). */
  eventBusArn(name: string): string;
  /** Creates a bus (as `CreateEventBus`) and returns its ARN; an existing one is kept. @throws Error for a malformed name */
  createEventBus(name: string): string;
  /** The events the bus (name or ARN) accepted so far, in order. @throws Error when the bus does not exist */
  events(eventBus?: string): readonly LocalEventBridgeEvent[];
  /** Every `PutEvents` request so far, in order. */
  calls(): readonly PutEventsCall[];
  /** Adds a rule that fails chosen entries; rules are tried in the order added. */
  failEntries(rule: FailEntriesRule): void;
  /** Stops the server. Idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link startEventBridgeServer}. */
export interface EventBridgeServerOptions {
  /** @default 0: a free port */
  readonly port?: number;
  /** The region in the ARNs and events. @default the local region (`us-east-1`) */
  readonly region?: string;
  /** The account in the ARNs and events. @default '000000000000' */
  readonly accountId?: string;
}

/** An error answered for a whole request. */
class RequestError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

const BUS_NAME = /^[/.\-_A-Za-z0-9]{1,256}$/;

/**
 * Starts the local EventBridge on 127.0.0.1 (a free port unless `port` is given), with the
 * `default` bus.
 *
 * @example
 * const eventBridge = await startEventBridgeServer();
 * const client = new EventBridgeClient({ endpoint: eventBridge.endpoint, region: eventBridge.region, credentials });
 * const busArn = eventBridge.createEventBus('orders');
 * // … publish …
 * eventBridge.events('orders'); // what the bus accepted
 * await eventBridge.stop();
 */
export async function startEventBridgeServer(options: EventBridgeServerOptions = {}): Promise<LocalEventBridge> {
  const region = options.region ?? localRegion;
  const accountId = options.accountId ?? '000000000000';
  const arnPrefix = `arn:aws:events:${region}:${accountId}:event-bus/`;
  const buses = new Map<string, LocalEventBridgeEvent[]>([['default', []]]);
  const calls: PutEventsCall[] = [];
  const rules: { rule: FailEntriesRule; left: number }[] = [];

  const eventBusArn = (name: string) => `${arnPrefix}${name}`;
  /** The bus name of a name or ARN of this server's account and region, or `undefined`. */
  const busNameOf = (nameOrArn: string): string | undefined => {
    if (nameOrArn.startsWith('arn:')) return nameOrArn.startsWith(arnPrefix) ? nameOrArn.slice(arnPrefix.length) : undefined;
    return nameOrArn;
  };
  const createEventBus = (name: string): string => {
    if (!BUS_NAME.test(name)) throw new Error(`event bus name ${JSON.stringify(name)} must be 1 to 256 of [/.-_A-Za-z0-9]`);
    if (!buses.has(name)) buses.set(name, []);
    return eventBusArn(name);
  };

  const operations: Record<string, (input: Record<string, unknown>) => unknown> = {
    PutEvents: (input) => putEvents(input),
    CreateEventBus: (input) => {
      const name = requiredString(input, 'Name');
      if (name === 'default' || buses.has(name))
        throw new RequestError('ResourceAlreadyExistsException', `Event bus ${name} already exists.`);
      if (!BUS_NAME.test(name) || name.includes('/'))
        throw new RequestError('ValidationException', `Event bus name ${name} is not valid: 1 to 256 of [.-_A-Za-z0-9].`);
      return { EventBusArn: createEventBus(name) };
    },
    DescribeEventBus: (input) => {
      const name = busNameOf(typeof input.Name === 'string' ? input.Name : 'default');
      if (name === undefined || !buses.has(name))
        throw new RequestError('ResourceNotFoundException', `Event bus ${String(input.Name)} does not exist.`);
      return { Name: name, Arn: eventBusArn(name) };
    },
    DeleteEventBus: (input) => {
      const name = requiredString(input, 'Name');
      if (name === 'default') throw new RequestError('ValidationException', 'Cannot delete event bus default.');
      buses.delete(name);
      return {};
    },
    ListEventBuses: () => ({ EventBuses: [...buses.keys()].map((name) => ({ Name: name, Arn: eventBusArn(name) })) }),
  };

  function putEvents(input: Record<string, unknown>): unknown {
    const entries = input.Entries;
    if (!Array.isArray(entries) || entries.length < 1 || entries.length > PUT_EVENTS_MAX_ENTRIES) {
      const count = Array.isArray(entries) ? entries.length : 0;
      throw new RequestError(
        'ValidationException',
        `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length between 1 and ${PUT_EVENTS_MAX_ENTRIES} (got ${count})`,
      );
    }
    const received = entries as ReceivedPutEventsEntry[];
    const total = received.reduce((sum, entry) => sum + entrySize(entry), 0);
    if (total > PUT_EVENTS_MAX_REQUEST_BYTES) {
      throw new RequestError(
        'ValidationException',
        `Total size of the entries in the request is over the limit (${total} > ${PUT_EVENTS_MAX_REQUEST_BYTES} bytes).`,
      );
    }
    const complete = (entry: ReceivedPutEventsEntry) => nonEmpty(entry.Source) && nonEmpty(entry.DetailType) && nonEmpty(entry.Detail);
    if (!received.some(complete)) {
      throw new RequestError('ValidationException', 'Parameters Source, DetailType and Detail are required in at least one entry.');
    }
    const results = received.map((entry) => {
      const failure = entryFailure(entry, complete(entry));
      if (failure !== undefined) return { ErrorCode: failure.code, ErrorMessage: failure.message };
      const bus = busNameOf(entry.EventBusName ?? 'default')!;
      const receivedAt = new Date();
      const event: LocalEventBridgeEvent = {
        version: '0',
        id: randomUUID(),
        'detail-type': entry.DetailType!,
        source: entry.Source!,
        account: accountId,
        time: (typeof entry.Time === 'number' ? new Date(entry.Time * 1000) : receivedAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        region,
        resources: [...(entry.Resources ?? [])],
        detail: JSON.parse(entry.Detail!) as Record<string, unknown>,
        ...(entry.TraceHeader === undefined ? {} : { traceHeader: entry.TraceHeader }),
      };
      buses.get(bus)!.push(event);
      return { EventId: event.id };
    });
    const failed = results.filter((result) => 'ErrorCode' in result).length;
    calls.push({ entries: received.length, failed });
    return { FailedEntryCount: failed, Entries: results };
  }

  /** Why an entry fails, or `undefined` when the bus takes it. */
  function entryFailure(entry: ReceivedPutEventsEntry, complete: boolean): { code: string; message: string } | undefined {
    if (!complete) return { code: 'InvalidArgument', message: 'Parameters Source, DetailType and Detail are required.' };
    if (entry.Source!.length > 256) return { code: 'InvalidArgument', message: 'Parameter Source is not valid: at most 256 characters.' };
    if (entry.Source!.startsWith('aws.'))
      return { code: 'NotAuthorizedForSourceException', message: `Not authorized for the source ${entry.Source}.` };
    if (entry.DetailType!.length > 128)
      return { code: 'InvalidArgument', message: 'Parameter DetailType is not valid: at most 128 characters.' };
    let detail: unknown;
    try {
      detail = JSON.parse(entry.Detail!);
    } catch {
      return { code: 'MalformedDetail', message: 'Detail is malformed.' };
    }
    if (detail === null || typeof detail !== 'object' || Array.isArray(detail))
      return { code: 'MalformedDetail', message: 'Detail is malformed.' };
    const bus = busNameOf(entry.EventBusName ?? 'default');
    if (bus === undefined || !buses.has(bus))
      return { code: 'ResourceNotFoundException', message: `Event bus ${entry.EventBusName} does not exist.` };
    for (const slot of rules) {
      if (slot.left <= 0 || !(slot.rule.match?.(entry) ?? true)) continue;
      slot.left -= 1;
      return { code: slot.rule.errorCode, message: slot.rule.errorMessage ?? `injected ${slot.rule.errorCode}` };
    }
    return undefined;
  }

  const server = createServer((request, response) => {
    void handle(request, response);
  });
  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const answer = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': randomUUID() });
      response.end(JSON.stringify(body));
    };
    const target = String(request.headers['x-amz-target'] ?? '');
    const operation = target.startsWith('AWSEvents.') ? operations[target.slice('AWSEvents.'.length)] : undefined;
    try {
      if (request.method !== 'POST' || operation === undefined) {
        throw new RequestError('UnknownOperationException', `Operation ${target || '(none)'} is not supported by the local EventBridge.`);
      }
      let input: unknown;
      try {
        input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      } catch {
        throw new RequestError('SerializationException', 'The request body is not valid JSON.');
      }
      if (input === null || typeof input !== 'object')
        throw new RequestError('SerializationException', 'The request body is not a JSON object.');
      answer(200, operation(input as Record<string, unknown>));
    } catch (error) {
      if (error instanceof RequestError) {
        if (target === 'AWSEvents.PutEvents') {
          const entries = (() => {
            try {
              const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { Entries?: unknown };
              return Array.isArray(parsed.Entries) ? parsed.Entries.length : 0;
            } catch {
              return 0;
            }
          })();
          calls.push({ entries, failed: entries, requestError: error.type });
        }
        answer(error.status, { __type: error.type, message: error.message });
      } else {
        answer(500, { __type: 'InternalException', message: (error as Error).message });
      }
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: options.port ?? 0, host: loopbackHost }, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;
  return {
    endpoint: `http://${loopbackHost}:${port}`,
    region,
    accountId,
    eventBusArn,
    createEventBus,
    events: (eventBus = 'default') => {
      const name = busNameOf(eventBus);
      const events = name === undefined ? undefined : buses.get(name);
      if (events === undefined) throw new Error(`the local EventBridge has no event bus ${eventBus}`);
      return [...events];
    },
    calls: () => [...calls],
    failEntries: (rule) => {
      rules.push({ rule, left: rule.times ?? 1 });
    },
    stop: () => {
      stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopped;
    },
  };
}

/** An entry's size as EventBridge counts it (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html). */
function entrySize(entry: ReceivedPutEventsEntry): number {
  const bytes = (value: unknown) => (typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : 0);
  let size = entry.Time === undefined ? 0 : 14;
  size += bytes(entry.Source) + bytes(entry.DetailType) + bytes(entry.Detail);
  for (const resource of entry.Resources ?? []) size += bytes(resource);
  return size;
}

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function requiredString(input: Record<string, unknown>, name: string): string {
  const value = input[name];
  if (typeof value !== 'string' || value === '') throw new RequestError('ValidationException', `${name} is required.`);
  return value;
}
