import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';

// The state table of infra/template.yaml (the `Table` resource), deletion protection aside (a
// prop of the construct). The task-search indexes (shared/src/store/search.rs) key on
// attributes every task has: each side by creation with its state and latest change projected
// (the caller's side with the callee too, for A2A ListTasks), a conversation by creation; `words_due` uses DynamoDB's multi-attribute partition
// keys. test/drift.test.ts holds this to the SAM template.

const S = (attributeName: string): dynamodb.CfnTable.AttributeDefinitionProperty => ({ attributeName, attributeType: 'S' });
const HASH = (attributeName: string): dynamodb.CfnTable.KeySchemaProperty => ({ attributeName, keyType: 'HASH' });
const RANGE = (attributeName: string): dynamodb.CfnTable.KeySchemaProperty => ({ attributeName, keyType: 'RANGE' });
const index = (
  indexName: string,
  projectionType: 'ALL' | 'KEYS_ONLY',
  ...keySchema: dynamodb.CfnTable.KeySchemaProperty[]
): dynamodb.CfnTable.GlobalSecondaryIndexProperty => ({ indexName, keySchema, projection: { projectionType } });
const including = (
  indexName: string,
  nonKeyAttributes: string[],
  ...keySchema: dynamodb.CfnTable.KeySchemaProperty[]
): dynamodb.CfnTable.GlobalSecondaryIndexProperty => ({
  indexName,
  keySchema,
  projection: { projectionType: 'INCLUDE', nonKeyAttributes },
});

export const TABLE: Omit<dynamodb.CfnTableProps, 'deletionProtectionEnabled'> = {
  billingMode: 'PAY_PER_REQUEST',
  pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  sseSpecification: { sseEnabled: true },
  // Tasks (and their delivery attempts) expire after taskRetentionDays.
  timeToLiveSpecification: { attributeName: "expires_at", enabled: true },
  attributeDefinitions: [S("pk"), S("sk"), S("gsi1pk"), S("gsi1sk"), S("gsi2pk"), S("gsi2sk"), S("callee_agent_id"), S("caller_agent_id"), S("created_at"), S("context_id"), S("changed_at"), S("words_due"), S("shard")],
  keySchema: [HASH("pk"), RANGE("sk")],
  globalSecondaryIndexes: [
    index("gsi1", "ALL", HASH("gsi1pk"), RANGE("gsi1sk")),
    index("gsi2", "ALL", HASH("gsi2pk"), RANGE("gsi2sk")),
    including("inbound_tasks", ["state", "changed_at"], HASH("callee_agent_id"), RANGE("created_at")),
    including("outbound_tasks", ["state", "changed_at", "callee_agent_id"], HASH("caller_agent_id"), RANGE("created_at")),
    index("conversation", "KEYS_ONLY", HASH("context_id"), RANGE("created_at")),
    index("words_due", "KEYS_ONLY", HASH("words_due"), HASH("shard"), RANGE("changed_at")),
  ],
};
