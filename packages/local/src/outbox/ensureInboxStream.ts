import { DescribeTableCommand, type DynamoDBClient, UpdateTableCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { ProvisioningError } from '../errors.js';

/**
 * Turns on the stream of the inbox table (view type `NEW_IMAGE`, as the `OutboxRelay` construct
 * needs it) unless it is on, and returns the stream's ARN. Records written before the stream was
 * turned on are not in it: call this before the consumer writes.
 *
 * @throws ProvisioningError when the table's stream is on with the view type `KEYS_ONLY` or
 *   `OLD_IMAGE` (the relay reads the new image; DynamoDB does not change a stream's view type in
 *   place: turn it off, then on again)
 */
export async function ensureInboxStream(dynamoDb: DynamoDBClient, tableName: string): Promise<string> {
  const described = await dynamoDb.send(new DescribeTableCommand({ TableName: tableName }));
  const spec = described.Table?.StreamSpecification;
  if (spec?.StreamEnabled === true) {
    if (spec.StreamViewType !== 'NEW_IMAGE' && spec.StreamViewType !== 'NEW_AND_OLD_IMAGES') {
      throw new ProvisioningError(
        `The stream of table ${tableName} has the view type ${spec.StreamViewType ?? 'unknown'}; the outbox relay needs NEW_IMAGE or NEW_AND_OLD_IMAGES.`,
      );
    }
    const arn = described.Table?.LatestStreamArn;
    if (arn === undefined) throw new ProvisioningError(`Table ${tableName} reports a stream without an ARN.`);
    return arn;
  }
  const updated = await dynamoDb.send(
    new UpdateTableCommand({ TableName: tableName, StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' } }),
  );
  await waitUntilTableExists({ client: dynamoDb, maxWaitTime: 60 }, { TableName: tableName });
  const arn =
    updated.TableDescription?.LatestStreamArn ??
    (await dynamoDb.send(new DescribeTableCommand({ TableName: tableName }))).Table?.LatestStreamArn;
  if (arn === undefined) throw new ProvisioningError(`Turning on the stream of table ${tableName} gave no stream ARN.`);
  return arn;
}
