import { Match, type Template } from 'aws-cdk-lib/assertions';
import { Bucket, BucketEncryption } from 'aws-cdk-lib/aws-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import type { IdempotentConsumer } from '../../packages/cdk/src/IdempotentConsumer.js';
import { allAllowedActions, allowStatements, arnOf, synthConsumer } from './stackHelpers.js';

const clusterArn = 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc';

function kafkaMapping(template: Template): Record<string, unknown> {
  const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping', { Properties: { Topics: Match.anyValue() } }));
  expect(mappings).toHaveLength(1);
  return (mappings[0] as { Properties: Record<string, unknown> }).Properties;
}

describe('KafkaSource onFailureBucket', () => {
  let template: Template;
  let bucket: Bucket;
  let consumer: IdempotentConsumer;

  beforeAll(() => {
    ({ template, consumer } = synthConsumer({
      extra: (stack) => {
        bucket = new Bucket(stack, 'GiveUps', { encryption: BucketEncryption.KMS });
        return { kafka: { clusterArn, consumerGroupId: 'orders', onFailureBucket: bucket } };
      },
    }));
  });

  it('makes the bucket the on-failure destination, in place of the dead-letter queue', () => {
    expect(kafkaMapping(template)).toMatchObject({ DestinationConfig: { OnFailure: { Destination: arnOf(bucket) } } });
  });

  it('grants s3:PutObject on its objects and s3:ListBucket on it, no read or delete, and kms:GenerateDataKey on its key', () => {
    const statements = allowStatements(template).filter((s) => !s.policy.includes('OutboxRelay'));
    const bucketId = arnOf(bucket)['Fn::GetAtt'][0];
    const onBucket = statements.filter((s) => JSON.stringify(s.resources).includes(`"${bucketId}"`));
    const actions = onBucket.flatMap((s) => s.actions).sort();
    expect(actions).toEqual(['s3:ListBucket', 's3:PutObject']);
    expect(allAllowedActions(template)).not.toContain('s3:DeleteObject*');
    const keyId = Object.keys(template.findResources('AWS::KMS::Key'))[0]!;
    expect(statements.filter((s) => JSON.stringify(s.resources).includes(`"${keyId}"`)).flatMap((s) => s.actions)).toEqual([
      'kms:GenerateDataKey',
    ]);
    expect(consumer.kafkaSource).toBeDefined();
  });

  it('keeps the dead-letter queue as the destination without it', () => {
    const { template: plain, consumer: c } = synthConsumer({ props: { kafka: { clusterArn, consumerGroupId: 'orders' } } });
    expect(kafkaMapping(plain)).toMatchObject({ DestinationConfig: { OnFailure: { Destination: arnOf(c.deadLetterQueue) } } });
  });
});
