/**
 * The business tables of generated consumers. Creating a table costs DynamoDB Local about half a
 * second, so tables are pooled by key schema (attribute names and types): a schedule's logical
 * table gets a pooled physical table of its schema (a second table of the same schema in one
 * schedule gets the pool's second one), and schedules keep apart by the salt in every key value.
 * The pool is replaced every `rotateEvery` schedules, so DynamoDB Local's memory stays flat.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import {
  CreateTableCommand,
  DeleteTableCommand,
  type DynamoDBClient,
  type KeySchemaElement,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import type { TableSpec } from './spec.js';

/** See the module comment. */
export class GeneratedTablePool {
  readonly #dynamoDb: DynamoDBClient;
  readonly #runTag: string;
  readonly #rotateEvery: number;
  readonly #tables = new Map<string, Promise<string>>();
  #uses = 0;
  #generation = 0;

  constructor(options: { readonly dynamoDb: DynamoDBClient; readonly runTag: string; readonly rotateEvery?: number }) {
    this.#dynamoDb = options.dynamoDb;
    this.#runTag = options.runTag;
    this.#rotateEvery = options.rotateEvery ?? 200;
  }

  /** Physical names for a schedule's tables (logical name → physical name); creates what is missing. */
  async tablesFor(tables: readonly TableSpec[]): Promise<Record<string, string>> {
    this.#uses += 1;
    if (this.#uses > this.#rotateEvery) {
      this.#uses = 1;
      await this.dispose();
      this.#generation += 1;
    }
    const count = new Map<string, number>();
    const names: Record<string, string> = {};
    for (const table of tables) {
      const schema = schemaOf(table);
      const n = count.get(schema) ?? 0;
      count.set(schema, n + 1);
      names[table.name] = await this.#table(table, schema, n);
    }
    return names;
  }

  /** Deletes every pooled table. */
  async dispose(): Promise<void> {
    const tables = await Promise.allSettled(this.#tables.values());
    this.#tables.clear();
    await Promise.allSettled(
      tables.flatMap((t) => (t.status === 'fulfilled' ? [this.#dynamoDb.send(new DeleteTableCommand({ TableName: t.value }))] : [])),
    );
  }

  #table(table: TableSpec, schema: string, n: number): Promise<string> {
    const id = `${schema}#${n}`;
    let pending = this.#tables.get(id);
    if (pending === undefined) {
      const name = `pv-${this.#runTag}-gen${this.#generation}-${createHash('sha256').update(schema).digest('hex').slice(0, 10)}-${n}`;
      const keys: KeySchemaElement[] = [{ AttributeName: table.partitionKey.name, KeyType: 'HASH' }];
      const definitions = [{ AttributeName: table.partitionKey.name, AttributeType: table.partitionKey.type }];
      if (table.sortKey !== undefined) {
        keys.push({ AttributeName: table.sortKey.name, KeyType: 'RANGE' });
        definitions.push({ AttributeName: table.sortKey.name, AttributeType: table.sortKey.type });
      }
      pending = (async () => {
        await this.#dynamoDb.send(
          new CreateTableCommand({ TableName: name, BillingMode: 'PAY_PER_REQUEST', KeySchema: keys, AttributeDefinitions: definitions }),
        );
        await waitUntilTableExists({ client: this.#dynamoDb, maxWaitTime: 60 }, { TableName: name });
        return name;
      })();
      this.#tables.set(id, pending);
      pending.catch(() => this.#tables.delete(id));
    }
    return pending;
  }
}

/** A table's key schema as text: the pool's key. */
function schemaOf(table: TableSpec): string {
  const sort = table.sortKey === undefined ? '' : `|${table.sortKey.name}:${table.sortKey.type}`;
  return `${table.partitionKey.name}:${table.partitionKey.type}${sort}`;
}
