/**
 * The tables, queues and bucket the proof suite's schedules share: one set per event source and
 * consumer, provisioned with the local runtime's provisioner (as `cdk deploy` shapes them).
 * Schedules keep apart by key prefixes (each has its own consumer name and ids); a set is
 * replaced by a fresh one every `rotateEvery` schedules, so DynamoDB Local's memory stays flat on
 * a long run.
 *
 * @module
 */
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { DeleteQueueCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { TableDefinition } from 'idempotent-consumer';
import { withOverrides } from 'idempotent-consumer/settings';
import { type LocalResources, provisionResources } from '@idempotent-consumer/local/internal';
import type { TableSpec } from './generated/spec.js';
import { GeneratedTablePool } from './generated/tables.js';
import type { ProveSource } from './schedule.js';
import type { WorkloadConsumer } from './workload.js';

/** Options of {@link ProveResources}. */
export interface ProveResourcesOptions {
  readonly dynamoDb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly s3: S3Client;
  /** Short tag of this run, in every name. */
  readonly runTag: string;
  /** Schedules per set before it is replaced. @default 200 */
  readonly rotateEvery?: number;
}

interface ResourceSet {
  readonly resources: LocalResources;
  uses: number;
}

/** See the module comment. */
export class ProveResources {
  readonly #options: ProveResourcesOptions;
  readonly #sets = new Map<string, Promise<ResourceSet>>();
  readonly #generated: GeneratedTablePool;
  #generation = 0;

  constructor(options: ProveResourcesOptions) {
    this.#options = options;
    this.#generated = new GeneratedTablePool({
      dynamoDb: options.dynamoDb,
      runTag: options.runTag,
      ...(options.rotateEvery === undefined ? {} : { rotateEvery: options.rotateEvery }),
    });
  }

  /**
   * The business tables of a generated consumer (logical name → physical name): pooled by key
   * schema (`generated/tables.ts`); the consumer's set of `get(source, 'generated', {})` holds the rest.
   */
  generatedTables(tables: readonly TableSpec[]): Promise<Record<string, string>> {
    return this.#generated.tablesFor(tables);
  }

  /** The set of `source` × `consumer`, provisioned at first use and replaced when used up. */
  async get(source: ProveSource, consumer: WorkloadConsumer, tables: Readonly<Record<string, TableDefinition>>): Promise<LocalResources> {
    const id = `${source}-${consumer}`;
    let pending = this.#sets.get(id);
    if (pending !== undefined) {
      const set = await pending;
      if (set.uses < (this.#options.rotateEvery ?? 200)) {
        set.uses += 1;
        return set.resources;
      }
      await this.#delete(set.resources);
    }
    const { dynamoDb, sqs, s3, runTag } = this.#options;
    const prefix = `pv-${runTag}-${id.slice(0, 9)}-${(this.#generation += 1)}-`;
    pending = provisionResources({
      dynamoDb,
      sqs,
      s3,
      settings: withOverrides({ queue: { fifo: source === 'fifo' } }),
      tables,
      prefix,
    }).then((resources) => ({ resources, uses: 1 }));
    this.#sets.set(id, pending);
    pending.catch(() => this.#sets.delete(id));
    return (await pending).resources;
  }

  /** Deletes every set. */
  async dispose(): Promise<void> {
    await this.#generated.dispose();
    const sets = await Promise.allSettled(this.#sets.values());
    this.#sets.clear();
    await Promise.allSettled(sets.flatMap((set) => (set.status === 'fulfilled' ? [this.#delete(set.value.resources)] : [])));
  }

  async #delete(resources: LocalResources): Promise<void> {
    const { dynamoDb, sqs } = this.#options;
    await Promise.allSettled([
      ...[resources.queueUrl, resources.deadLetterQueueUrl].map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))),
      ...[resources.inboxTable, resources.idempotencyTable, ...Object.values(resources.tables)].map((TableName) =>
        dynamoDb.send(new DeleteTableCommand({ TableName })),
      ),
    ]);
  }
}
