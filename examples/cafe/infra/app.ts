/**
 * The CDK app: the café's stack (`examples/cafe/infra/CafeStack.ts`), checked by cdk-nag's AWS
 * Solutions rules (a finding that is not acknowledged with a reason fails the synth). A refused
 * setting or context value is printed as one message and `cdk synth` exits non-zero.
 *
 * `npx cdk synth` needs no AWS account or region. Context selects the variants (see `CafeStack`):
 * `-c fifo=true`; `-c kafkaClusterArn=…` or `-c kafkaBootstrapServers=host:port,… -c kafkaSecretArn=…`
 * (with `-c kafkaSecretKeyArn`, `-c kafkaTopic`, `-c kafkaConsumerGroup`); `-c alarmEmail=…`;
 * `-c tableEncryption=customer-managed`; `-c nodeRuntime=nodejs22.x` (or `nodejs24.x`, the default).
 */
import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { runCdkApp } from '@idempotent-consumer/cdk';
import { CafeStack } from './CafeStack.js';

runCdkApp((app) => {
  new CafeStack(app, 'CafeOrders');
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
});
