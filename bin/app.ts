/**
 * The CDK app: one stack, `IdempotentConsumer`, checked by cdk-nag's AWS Solutions rules (a
 * finding that is not acknowledged with a reason fails the synth).
 *
 * `npx cdk synth` needs no AWS account or region. Context selects the variants (see
 * `ConsumerStack`): `-c fifo=true` a FIFO queue; `-c kafkaClusterArn=<MSK cluster ARN>` (or
 * `-c kafkaBootstrapServers=host:port,... -c kafkaSecretArn=<secret ARN>`), with optional
 * `-c kafkaTopic=orders -c kafkaConsumerGroup=<id>`, a Kafka event source on the same function;
 * `-c alarmEmail=ops@example.com` an email subscription to the alarm topic.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ConsumerStack } from '../lib/ConsumerStack.js';

const app = new App();
new ConsumerStack(app, 'IdempotentConsumer');
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
