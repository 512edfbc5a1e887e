import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';

// The state table of infra/template.yaml (the `Table` resource) as the props of the L2
// `dynamodb.Table`, deletion protection and removal aside (the construct sets them). The
// task-search indexes (shared/src/store/search.rs) key on attributes every task has: each side by
// creation with its state and latest change projected (the caller's side with the callee too, for
// A2A ListTasks), a conversation by creation; `words_due` uses DynamoDB's multi-attribute
// partition keys (`partitionKeys`). test/drift.test.ts holds this to the SAM template.
//
// `dynamodb.Table`, not `TableV2`: TableV2 synthesizes an `AWS::DynamoDB::GlobalTable`, another
// resource type than the SAM template's `AWS::DynamoDB::Table` (a stack switching between them
// would replace its table, and its data with it).

const S = (name: string): dynamodb.Attribute => ({ name, type: dynamodb.AttributeType.STRING });
const index = (
  indexName: string,
  projectionType: dynamodb.ProjectionType,
  partitionKeys: dynamodb.Attribute[],
  sortKey: dynamodb.Attribute,
  nonKeyAttributes?: string[],
): dynamodb.GlobalSecondaryIndexProps => ({
  indexName,
  ...(partitionKeys.length === 1 ? { partitionKey: partitionKeys[0] } : { partitionKeys }),
  sortKey,
  projectionType,
  ...(nonKeyAttributes ? { nonKeyAttributes } : {}),
});
const { ALL, KEYS_ONLY, INCLUDE } = dynamodb.ProjectionType;

/** The table's own key. */
export const TABLE_KEY = { partitionKey: S('pk'), sortKey: S('sk') } as const;

/** The table's global secondary indexes, in the order of infra/template.yaml. */
export const TABLE_INDEXES: readonly dynamodb.GlobalSecondaryIndexProps[] = [
  index('gsi1', ALL, [S('gsi1pk')], S('gsi1sk')),
  index('gsi2', ALL, [S('gsi2pk')], S('gsi2sk')),
  index('inbound_tasks', INCLUDE, [S('callee_agent_id')], S('created_at'), ['state', 'changed_at']),
  index('outbound_tasks', INCLUDE, [S('caller_agent_id')], S('created_at'), ['state', 'changed_at', 'callee_agent_id']),
  index('conversation', KEYS_ONLY, [S('context_id')], S('created_at')),
  index('words_due', KEYS_ONLY, [S('words_due'), S('shard')], S('changed_at')),
];

/**
 * The attribute definitions in the order of infra/template.yaml. The L2 table lists them in the
 * order its keys name them (the indexes' keys after the table's), the same set in another order;
 * the construct sets this order on the resource, so the template is the one the construct
 * synthesized when it was an L1 `CfnTable` (no update for a stack deployed from it).
 */
export const TABLE_ATTRIBUTES: readonly string[] = [
  'pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk', 'callee_agent_id', 'caller_agent_id', 'created_at',
  'context_id', 'changed_at', 'words_due', 'shard',
];

/** Tasks (and their delivery attempts) expire after taskRetentionDays, at the time this attribute holds. */
export const TTL_ATTRIBUTE = 'expires_at';

/** The L2 table's props, as infra/template.yaml's `Table`. */
export const TABLE: dynamodb.TableProps = {
  ...TABLE_KEY,
  billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
  pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  encryption: dynamodb.TableEncryption.AWS_MANAGED,
  timeToLiveAttribute: TTL_ATTRIBUTE,
};
