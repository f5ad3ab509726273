/** Names of the relay's CloudWatch metrics (namespace `IdempotentConsumer`, dimension `service` = consumer name). */
export const OutboxMetricName = {
  /** Messages sent to their destination by this relay (Count); a publish found completed before is not counted. */
  OutboxMessagesPublished: 'OutboxMessagesPublished',
  /**
   * Milliseconds from an item's commit (`createdAt`) to its send. Its maximum over a period is the
   * age of the oldest item published in it; the construct alarms on it.
   */
  OutboxPublishDelay: 'OutboxPublishDelay',
  /** Stream records reported as batch item failures (Count): they are retried. */
  OutboxPublishFailures: 'OutboxPublishFailures',
} as const;
