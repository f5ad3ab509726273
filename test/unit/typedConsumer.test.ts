/**
 * Type-level tests of a consumer's declaration (issue 17): `createIdempotentConsumer` infers the
 * table names from `tables` and the side effects from `sideEffects`, so that a misspelt name, or a
 * side effect's wrong input, is a compile error; without them, names stay `string` as before.
 *
 * Checked by `tsc --noEmit -p .` (this file is in the project): each `// @ts-expect-error` must
 * meet an error on its next line, and each `expectTypeOf` must hold. The consumers are built inside
 * functions that never run: only their types matter here.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import {
  createIdempotentConsumer,
  createRecordHandler,
  type Decision,
  type IdempotentConsumerOptions,
  type ItemKey,
  type SideEffectContext,
  type SideEffectHandler,
  type SideEffectInput,
  type SideEffectRequest,
  type State,
  type TableDefinition,
  type Write,
} from 'idempotent-consumer';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { cafeConsumerOptions, cafeSideEffects } from '../../examples/cafe/consumer.js';
import type { PaymentReceived } from '../../examples/cafe/domain/order.js';
import type { CafeTable } from '../../examples/cafe/settings.js';
import type { inventoryConsumerOptions } from '../../examples/inventory/consumer.js';

interface Grant {
  readonly eventId: string;
  readonly userId: string;
  readonly day: string;
}
declare const schema: StandardSchemaV1<unknown, Grant>;
const tables = { users: { partitionKey: 'userId' }, grants: { partitionKey: 'userId', sortKey: 'day' } } as const satisfies Record<
  string,
  TableDefinition
>;
type Table = keyof typeof tables;

/** Never called: the consumers below are for the compiler. */
function declarations() {
  // ---------------------------------------------------------------------------------------------
  // Table names, inferred from `tables`
  // ---------------------------------------------------------------------------------------------
  createIdempotentConsumer({
    schema,
    idempotencyKey: 'eventId',
    tables,
    read: (event) => [
      { table: 'users', key: { userId: event.userId } },
      { table: 'grants', key: { userId: event.userId, day: event.day } },
    ],
    decide: (event, state) => {
      expectTypeOf(state).toEqualTypeOf<State<Table>>();
      state.get('users', { userId: event.userId });
      // @ts-expect-error a misspelt table in state.get
      state.get('user', { userId: event.userId });
      return {
        writes: [
          { Put: { TableName: 'grants', Item: { userId: event.userId, day: event.day } } },
          { Update: { TableName: 'users', Key: { userId: event.userId }, UpdateExpression: 'ADD #n :one' } },
          { Delete: { TableName: 'grants', Key: { userId: event.userId, day: 'old' } } },
          { ConditionCheck: { TableName: 'users', Key: { userId: 'u' }, ConditionExpression: 'attribute_exists(userId)' } },
        ],
      };
    },
  });
  createIdempotentConsumer({
    schema,
    idempotencyKey: 'eventId',
    tables,
    // @ts-expect-error a misspelt table in read
    read: (event) => [{ table: 'usres', key: { userId: event.userId } }],
    decide: () => ({}),
  });
  const misspeltWrites = (event: Grant): Decision<Table>[] => [
    // @ts-expect-error a misspelt table in a Put
    { writes: [{ Put: { TableName: 'grant', Item: { userId: event.userId } } }] },
    // @ts-expect-error a misspelt table in an Update
    { writes: [{ Update: { TableName: 'Users', Key: { userId: event.userId }, UpdateExpression: 'SET a = :a' } }] },
    // @ts-expect-error a misspelt table in a Delete
    { writes: [{ Delete: { TableName: 'grantz', Key: { userId: event.userId } } }] },
    // @ts-expect-error a misspelt table in a ConditionCheck
    { writes: [{ ConditionCheck: { TableName: 'user', Key: { userId: event.userId }, ConditionExpression: 'x' } }] },
  ];
  createIdempotentConsumer({
    schema,
    idempotencyKey: 'eventId',
    tables,
    // @ts-expect-error a misspelt table in a write of decide (reported on decide, whose body is a block)
    decide: (event) => {
      return { writes: [{ Put: { TableName: 'grnts', Item: { userId: event.userId } } }] };
    },
  });
  createIdempotentConsumer({
    schema,
    idempotencyKey: 'eventId',
    tables,
    decide: () => ({}),
    sideEffects: {
      record: async (input: { userId: string }, context) => {
        expectTypeOf(context).toEqualTypeOf<SideEffectContext<Table>>();
        context.tableName('users');
        // @ts-expect-error a misspelt table in context.tableName
        context.tableName('usrs');
        return input.userId;
      },
    },
  });

  // Names stay `string` when `tables` and `sideEffects` are left out or typed wide: no break for existing code.
  const wideTables: Record<string, TableDefinition> = tables;
  const wideEffects: Record<string, SideEffectHandler> = { elsewhere: async (_input, context) => context.tableName('not-checked') };
  for (const options of [{ tables: wideTables, sideEffects: wideEffects }, {}]) {
    createIdempotentConsumer({
      ...options,
      schema,
      idempotencyKey: 'eventId',
      read: () => [{ table: 'anything', key: {} }],
      decide: (_event, state) => {
        expectTypeOf(state).toEqualTypeOf<State>();
        state.get('whatever', {});
        return { writes: [{ Put: { TableName: 'any-name', Item: {} } }], sideEffects: [{ name: 'any-effect', input: 1 }] };
      },
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Side effects, inferred from `sideEffects`
  // ---------------------------------------------------------------------------------------------
  const sendReceipt = async (input: { orderId: string }, context: SideEffectContext) => `${context.effectKey}:${input.orderId}`;
  createIdempotentConsumer({
    schema,
    idempotencyKey: 'eventId',
    decide: (event) => ({
      sideEffects: [
        { name: 'sendReceipt', input: { orderId: event.eventId } },
        { name: 'grantBonus', input: { userId: event.userId }, key: `${event.userId}:${event.day}` },
        { name: 'ping' },
        { name: 'ping', input: undefined },
        { name: 'anyInput', input: [1, 'two'] },
      ],
    }),
    sideEffects: {
      sendReceipt,
      grantBonus: async (input: { userId: string }, context) => context.effectKey + input.userId,
      ping: async () => undefined,
      anyInput: async (input, context) => {
        expectTypeOf(context.effectKey).toEqualTypeOf<string>();
        return input;
      },
    },
  });
  createIdempotentConsumer({
    schema,
    idempotencyKey: 'eventId',
    decide: (event) => ({
      sideEffects: [
        // @ts-expect-error a side effect that is not in sideEffects
        { name: 'sendReciept', input: { orderId: event.eventId } },
        // @ts-expect-error the input of another type than the handler's
        { name: 'sendReceipt', input: { order: event.eventId } },
        // @ts-expect-error no input, where the handler needs one
        { name: 'sendReceipt' },
        // @ts-expect-error a key that is not a string
        { name: 'sendReceipt', input: { orderId: event.eventId }, key: 7 },
      ],
    }),
    sideEffects: { sendReceipt, ping: async () => undefined },
  });
  // A handler with an annotated input beside one without any annotation (a case TypeScript's
  // inference could get wrong): both are known by name.
  createIdempotentConsumer({
    schema,
    idempotencyKey: 'eventId',
    // @ts-expect-error a side effect that is not in sideEffects
    decide: () => ({ sideEffects: [{ name: 'c' }] }),
    sideEffects: { a: async (n: number) => n, b: async (input, context) => [input, context.effectKey] },
  });

  // The record handler is typed the same way.
  createRecordHandler({
    schema,
    idempotencyKey: 'eventId',
    tables,
    // @ts-expect-error a misspelt table in read
    read: () => [{ table: 'grnts', key: {} }],
    decide: () => ({}),
  });

  // ---------------------------------------------------------------------------------------------
  // Options declared apart from the call name their types
  // ---------------------------------------------------------------------------------------------
  const sideEffects = { sendReceipt };
  const declared: IdempotentConsumerOptions<Grant, Table, typeof sideEffects> = {
    schema,
    idempotencyKey: 'eventId',
    tables,
    read: (event) => [{ table: 'users', key: { userId: event.userId } }],
    decide: (event) => ({
      writes: [{ Put: { TableName: 'users', Item: { userId: event.userId } } }],
      sideEffects: [{ name: 'sendReceipt', input: { orderId: event.eventId } }],
    }),
    sideEffects,
  };
  createIdempotentConsumer(declared);
  const wrong: IdempotentConsumerOptions<Grant, Table, typeof sideEffects> = {
    schema,
    idempotencyKey: 'eventId',
    // @ts-expect-error a table that is not one of the declared names
    tables: { users: { partitionKey: 'userId' }, grant: { partitionKey: 'userId' } },
    decide: (event) => ({
      // @ts-expect-error a misspelt table
      writes: [{ Put: { TableName: 'user', Item: { userId: event.userId } } }],
      // @ts-expect-error a misspelt side effect
      sideEffects: [{ name: 'sendRecipt', input: { orderId: event.eventId } }],
    }),
    sideEffects,
  };
  // Wide options, as before: an unannotated input is `unknown`.
  const wide: IdempotentConsumerOptions<Grant> = {
    schema,
    idempotencyKey: 'eventId',
    decide: () => ({ sideEffects: [{ name: 'anything', input: { any: 'thing' } }] }),
    sideEffects: {
      anything: async (input) => {
        expectTypeOf(input).toEqualTypeOf<unknown>();
        return input;
      },
    },
  };
  return [misspeltWrites, wrong, wide];
}

describe('typed consumer declarations (issue 17)', () => {
  it('type-checks the declarations above (tsc --noEmit -p . compiles this file)', () => {
    expect(typeof declarations).toBe('function');
  });

  it('keeps the wide forms of the types when no names are given', () => {
    expectTypeOf<ItemKey['table']>().toEqualTypeOf<string>();
    expectTypeOf<Parameters<State['get']>[0]>().toEqualTypeOf<string>();
    expectTypeOf<NonNullable<Write['Put']>['TableName']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<SideEffectRequest['name']>().toEqualTypeOf<string>();
    expectTypeOf<SideEffectRequest['input']>().toEqualTypeOf<unknown>();
    expectTypeOf<SideEffectRequest['key']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Parameters<SideEffectHandler>[0]>().toEqualTypeOf<unknown>();
    expectTypeOf<Parameters<SideEffectContext['tableName']>[0]>().toEqualTypeOf<string>();
    // A write built with lib-dynamodb's own type is a write of the wide form.
    expectTypeOf<NonNullable<import('@aws-sdk/lib-dynamodb').TransactWriteCommandInput['TransactItems']>[number]>().toExtend<Write>();
  });

  it('narrows every name to the consumer’s', () => {
    expectTypeOf<ItemKey<Table>['table']>().toEqualTypeOf<'users' | 'grants'>();
    expectTypeOf<NonNullable<Write<Table>['Update']>['TableName']>().toEqualTypeOf<Table | undefined>();
    type Effects = { send: (input: { id: string }) => Promise<void>; ping: () => Promise<void> };
    expectTypeOf<SideEffectRequest<Effects>['name']>().toEqualTypeOf<'send' | 'ping'>();
    expectTypeOf<SideEffectInput<Effects['send']>>().toEqualTypeOf<{ id: string }>();
    expectTypeOf<{ name: 'send'; input: { id: string }; key: 'u-1:2026-03-01' }>().toExtend<SideEffectRequest<Effects>>();
    expectTypeOf<{ name: 'ping' }>().toExtend<SideEffectRequest<Effects>>();
    expectTypeOf<{ name: 'send' }>().not.toExtend<SideEffectRequest<Effects>>();
    // A consumer's typed decision is still a decision of the wide form (tools that take any consumer's).
    expectTypeOf<Decision<Table>>().toExtend<Decision>();
  });

  it('types the examples by their own names', () => {
    expectTypeOf<typeof cafeConsumerOptions>().toEqualTypeOf<
      IdempotentConsumerOptions<Parameters<typeof cafeConsumerOptions.decide>[0], CafeTable, typeof cafeSideEffects>
    >();
    expectTypeOf<SideEffectInput<(typeof cafeSideEffects)['notifyCustomer']>>().toEqualTypeOf<PaymentReceived>();
    expectTypeOf<Parameters<NonNullable<typeof inventoryConsumerOptions.read>>>().toBeArray();
    expectTypeOf<ReturnType<NonNullable<typeof inventoryConsumerOptions.read>>[number]['table']>().toEqualTypeOf<
      'stock' | 'reservations'
    >();
  });
});
