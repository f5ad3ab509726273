/**
 * The CDK app: one stack, `IdempotentConsumer`, checked by cdk-nag's AWS Solutions rules (a
 * finding that is not acknowledged with a reason fails the synth).
 *
 * `npx cdk synth` needs no AWS account or region; `-c fifo=true` selects a FIFO queue.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ConsumerStack } from '../lib/ConsumerStack.js';

const app = new App();
new ConsumerStack(app, 'IdempotentConsumer');
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
