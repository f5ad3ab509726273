/**
 * The grant on a table's customer managed key that the consumer's and the relay's roles share.
 *
 * @module
 */
import { Aws } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';

/**
 * The KMS actions on a table's customer managed key, allowed only through DynamoDB
 * (`kms:ViaService` = `dynamodb.<region>.amazonaws.com`): those AWS CDK grants for a table's read
 * and write data (`kms:Decrypt`, `kms:DescribeKey`, `kms:Encrypt`, `kms:GenerateDataKey*`,
 * `kms:ReEncrypt*`), with the wildcards spelled out.
 */
export const TABLE_KEY_ACTIONS = [
  'kms:Decrypt',
  'kms:DescribeKey',
  'kms:Encrypt',
  'kms:GenerateDataKey',
  'kms:GenerateDataKeyWithoutPlaintext',
  'kms:ReEncryptFrom',
  'kms:ReEncryptTo',
] as const;

/**
 * Grants {@link TABLE_KEY_ACTIONS} on `table`'s customer managed key, only through DynamoDB
 * (`kms:ViaService` = `dynamodb.<region>.amazonaws.com`); nothing when the table has no such key.
 */
export function grantTableKey(grantee: IGrantable, table: ITable): void {
  const key = table.encryptionKey;
  if (key === undefined) return;
  Grant.addToPrincipal({
    grantee,
    actions: [...TABLE_KEY_ACTIONS],
    resourceArns: [key.keyArn],
    conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${Aws.REGION}.amazonaws.com` } },
  });
}
