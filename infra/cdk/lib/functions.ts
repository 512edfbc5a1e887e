// The gateway's functions as data: one entry per Lambda function of infra/template.yaml, with what
// differs between them (the route it serves, timeout, long-poll reserved concurrency, environment,
// the statements of its IAM policy, its trigger); every one runs the same gateway binary.
// `ForgebenchGateway` turns each entry into a function, a role and a log group; the API's paths
// are not here: they come from infra/openapi.yaml, whose integrations name each function by `id`
// (`${<id>Function.Arn}`).
//
// Keep this table and infra/template.yaml in step: test/drift.test.ts compares the synthesized
// stack with the SAM template (functions and the route each serves, settings, environment names,
// every policy's actions on every kind of resource, routes, table, queues) and fails on any
// difference.

/** What a statement's `Resource` names, by kind. */
export type ResourceKind =
  | 'table' // the state table
  | 'indexes' // every index of the table (`<table arn>/index/*`)
  | `index/${string}` // one index of the table
  | 'bodies' // the body bucket's `tasks/*` objects
  | 'queue' // the push queue
  | 'key'; // the secrets key

/** One Allow statement of a function's policy. */
export interface Grant {
  readonly sid?: string;
  /** Full IAM actions (`dynamodb:GetItem`). */
  readonly actions: readonly string[];
  readonly on: readonly ResourceKind[];
  /** `ForAllValues:StringLike` on `dynamodb:LeadingKeys`. */
  readonly leadingKeys?: readonly string[];
  /** `ForAllValues:StringEquals` on `dynamodb:Attributes`. */
  readonly attributes?: readonly string[];
  /** `StringEquals` on `kms:EncryptionContext:purpose`. */
  readonly purposes?: readonly string[];
  /** `StringEquals` `kms:ViaService` `s3.<region>.amazonaws.com`: S3's own use of the key. */
  readonly viaS3?: boolean;
}

/** A value of the construct that a function's environment variable names. */
export type EnvValue = 'queueUrl' | 'bucketName' | 'keyId' | 'operatorKeyHash' | 'publicUrl';

export type Trigger =
  | { readonly kind: 'schedule'; readonly id: string; readonly expression: string }
  | { readonly kind: 'pushQueue'; readonly id: string; readonly batchSize: number; readonly reportBatchItemFailures: boolean };

export interface FunctionSpec {
  /** The SAM logical id without `Function`, and the construct id. */
  readonly id: string;
  /**
   * The route, worker or sweeper the function serves: its `FORGEBENCH_ROUTE`, which the one
   * gateway binary (functions/gateway) dispatches on (`open-task`, `push-worker`, ...).
   */
  readonly route: string;
  readonly description: string;
  /** Seconds; default 29 (the buffered API Gateway integration's bound). */
  readonly timeout?: number;
  /** MiB; default 256. */
  readonly memorySize?: number;
  /** Reserved concurrency `longPollConcurrency`. */
  readonly longPoll?: boolean;
  /** Variables beside the ones every function gets (route, table, wait bound, retention, logging). */
  readonly env?: Readonly<Record<string, EnvValue>>;
  readonly grants: readonly Grant[];
  readonly trigger?: Trigger;
}

const prefixed = (service: string, actions: readonly string[]) => actions.map((a) => `${service}:${a}`);

/** Every route function may update `last_used_at` on key records and nothing else (docs/deploy.md). */
export const RECORD_KEY_USE: Grant = {
  sid: 'RecordKeyUse',
  actions: ['dynamodb:UpdateItem'],
  on: ['table'],
  leadingKeys: ['KEY#*'],
  attributes: ['pk', 'sk', 'last_used_at'],
};

/** The long-poll functions count an agent's waiting requests in `POLLS#` items. */
export const LONG_POLL_SLOTS: Grant = {
  sid: 'LongPollSlots',
  actions: ['dynamodb:Query'],
  on: ['table'],
  leadingKeys: ['POLLS#*'],
};

/**
 * The functions that open tasks count a tree's calls again from the ledger (`ROOT#` partitions
 * of gsi1) when a call-tree limit needs it (docs/api.md, "Governance").
 */
export const CALL_TREES: Grant = {
  sid: 'CallTrees',
  actions: ['dynamodb:Query'],
  on: ['index/gsi1'],
};

/** A push endpoint's health item (`AGENT#{id}`, `HEALTH`): forgotten or reset beside the agent. */
const ENDPOINT_HEALTH = (sid: string, action: string): Grant => ({
  sid,
  actions: [`dynamodb:${action}`],
  on: ['table'],
  leadingKeys: ['AGENT#*'],
});

const onTable = (...a: string[]): Grant => ({ actions: prefixed('dynamodb', a), on: ['table'] });
const onTableAndIndexes = (...a: string[]): Grant => ({ actions: prefixed('dynamodb', a), on: ['table', 'indexes'] });
const onIndex = (index: string, ...a: string[]): Grant => ({ actions: prefixed('dynamodb', a), on: [`index/${index}`] });
const onBodies = (...a: string[]): Grant => ({ actions: prefixed('s3', a), on: ['bodies'] });
const onQueue = (...a: string[]): Grant => ({ actions: prefixed('sqs', a), on: ['queue'] });
const keyViaS3 = (...a: string[]): Grant => ({ actions: prefixed('kms', a), on: ['key'], viaS3: true });
const sealing = (purposes: string[], ...a: string[]): Grant => ({ actions: prefixed('kms', a), on: ['key'], purposes });

/** In the order of infra/template.yaml. */
export const FUNCTIONS: readonly FunctionSpec[] = [
  {
    id: "ApproveBinding",
    route: "approve-binding",
    description: "POST /v1/agents/{agent}/agents/{binding_id}/approve",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem"),
    ],
  },
  {
    id: "CancelTask",
    route: "cancel-task",
    description: "POST /v1/agents/{agent}/tasks/{task_id}/cancel",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onBodies("GetObject"),
      keyViaS3("Decrypt"),
      onTable("GetItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "PutItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "A2aTaskAction",
    route: "a2a-task-action",
    description: "POST /v1/agents/{agent}/a2a/tasks/{task}",
    timeout: 900,
    longPoll: true,
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      LONG_POLL_SLOTS,
      RECORD_KEY_USE,
      onBodies("GetObject"),
      keyViaS3("Decrypt"),
      onTable("GetItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "PutItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "ClaimNextTask",
    route: "claim-next-task",
    description: "GET /v1/agents/me/tasks/next",
    timeout: 35,
    longPoll: true,
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onBodies("GetObject"),
      keyViaS3("Decrypt"),
      onTableAndIndexes("GetItem", "Query", "UpdateItem", "BatchGetItem", "BatchWriteItem", "PutItem", "DeleteItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "CreateAgentKey",
    route: "create-agent-key",
    description: "POST /v1/agents/{agent}/keys",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem", "Query"),
    ],
  },
  {
    id: "CreateAgent",
    route: "create-agent",
    description: "POST /v1/agents",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem"),
    ],
  },
  {
    id: "CreateMember",
    route: "create-member",
    description: "POST /v1/members",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem", "UpdateItem"),
    ],
  },
  {
    id: "CreateTenant",
    route: "create-tenant",
    description: "POST /v1/tenants",
    env: { FORGEBENCH_OPERATOR_KEY_HASH: "operatorKeyHash" },
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem"),
    ],
  },
  {
    id: "GetAgent",
    route: "get-agent",
    description: "GET /v1/agents/{agent}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem"),
    ],
  },
  {
    id: "GetMe",
    route: "get-me",
    description: "GET /v1/agents/me",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem"),
    ],
  },
  {
    id: "GetTask",
    route: "get-task",
    description: "GET /v1/agents/{agent}/tasks/{task_id}",
    timeout: 35,
    longPoll: true,
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      LONG_POLL_SLOTS,
      RECORD_KEY_USE,
      onBodies("GetObject"),
      keyViaS3("Decrypt"),
      onTable("GetItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "PutItem", "DeleteItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "A2aListTasks",
    route: "a2a-list-tasks",
    description: "GET /v1/agents/{agent}/a2a/tasks",
    env: { FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onBodies("GetObject"),
      keyViaS3("Decrypt"),
      onTable("GetItem", "BatchGetItem"),
      onIndex("pairs", "Query"),
    ],
  },
  {
    id: "A2aCreatePushConfig",
    route: "a2a-create-push-config",
    description: "POST /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem", "UpdateItem"),
      sealing(["notify-credentials", "notify-token"], "Encrypt"),
    ],
  },
  {
    id: "A2aListPushConfigs",
    route: "a2a-list-push-configs",
    description: "GET /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "Query"),
      sealing(["notify-token"], "Decrypt"),
    ],
  },
  {
    id: "A2aGetPushConfig",
    route: "a2a-get-push-config",
    description: "GET /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs/{config}",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem"),
      sealing(["notify-token"], "Decrypt"),
    ],
  },
  {
    id: "A2aDeletePushConfig",
    route: "a2a-delete-push-config",
    description: "DELETE /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs/{config}",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "DeleteItem", "PutItem", "UpdateItem"),
    ],
  },
  {
    id: "A2aGetTask",
    route: "a2a-get-task",
    description: "GET /v1/agents/{agent}/a2a/tasks/{task}",
    timeout: 900,
    longPoll: true,
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      LONG_POLL_SLOTS,
      RECORD_KEY_USE,
      onBodies("GetObject"),
      keyViaS3("Decrypt"),
      onTable("GetItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "PutItem", "DeleteItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "GrantBindings",
    route: "grant-bindings",
    description: "POST /v1/agents/{agent}/agents",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem"),
    ],
  },
  {
    id: "ListAgents",
    route: "list-agents",
    description: "GET /v1/agents",
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query"),
    ],
  },
  {
    id: "ListAudit",
    route: "list-audit",
    description: "GET /v1/audit",
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query"),
    ],
  },
  {
    id: "SearchTasks",
    route: "search-tasks",
    description: "GET /v1/tasks",
    env: { FORGEBENCH_BODY_BUCKET: "bucketName" },
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query", "BatchGetItem"),
      onBodies("GetObject"),
      keyViaS3("Decrypt"),
    ],
  },
  {
    id: "ListBindings",
    route: "list-bindings",
    description: "GET /v1/agents/{agent}/agents",
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query"),
    ],
  },
  {
    id: "AddTaskMessage",
    route: "add-task-message",
    description: "POST /v1/agents/{agent}/tasks/{task_id}/messages",
    env: { FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId", FORGEBENCH_PUSH_QUEUE_URL: "queueUrl" },
    grants: [
      RECORD_KEY_USE,
      onBodies("PutObject", "GetObject"),
      keyViaS3("GenerateDataKey", "Decrypt"),
      onTable("GetItem", "PutItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "ConditionCheckItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "OpenTask",
    route: "open-task",
    description: "POST /v1/agents/{agent}/tasks",
    timeout: 35,
    longPoll: true,
    env: { FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId", FORGEBENCH_PUSH_QUEUE_URL: "queueUrl" },
    grants: [
      LONG_POLL_SLOTS,
      RECORD_KEY_USE,
      onBodies("PutObject", "GetObject"),
      keyViaS3("GenerateDataKey", "Decrypt"),
      onTable("GetItem", "PutItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "ConditionCheckItem", "DeleteItem"),
      CALL_TREES,
      onQueue("SendMessage"),
    ],
  },
  {
    id: "A2aSendMessage",
    route: "a2a-send-message",
    description: "POST /v1/agents/{agent}/a2a/message:send",
    timeout: 35,
    longPoll: true,
    env: { FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId", FORGEBENCH_PUSH_QUEUE_URL: "queueUrl" },
    grants: [
      sealing(["notify-credentials", "notify-token"], "Encrypt"),
      LONG_POLL_SLOTS,
      RECORD_KEY_USE,
      onBodies("PutObject", "GetObject"),
      keyViaS3("GenerateDataKey", "Decrypt"),
      onTable("GetItem", "PutItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "ConditionCheckItem", "DeleteItem"),
      CALL_TREES,
      onQueue("SendMessage"),
    ],
  },
  {
    id: "TaskEvents",
    route: "task-events",
    description: "GET /v1/agents/{agent}/tasks/{task_id}/events",
    timeout: 900,
    longPoll: true,
    env: { FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId", FORGEBENCH_PUSH_QUEUE_URL: "queueUrl" },
    grants: [
      onQueue("SendMessage"),
      LONG_POLL_SLOTS,
      RECORD_KEY_USE,
      onBodies("GetObject"),
      keyViaS3("Decrypt"),
      onTable("GetItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "PutItem", "DeleteItem"),
    ],
  },
  {
    id: "A2aStreamMessage",
    route: "a2a-stream-message",
    description: "POST /v1/agents/{agent}/a2a/message:stream",
    timeout: 900,
    longPoll: true,
    env: { FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId", FORGEBENCH_PUSH_QUEUE_URL: "queueUrl" },
    grants: [
      LONG_POLL_SLOTS,
      RECORD_KEY_USE,
      onBodies("PutObject", "GetObject"),
      keyViaS3("GenerateDataKey", "Decrypt"),
      onTable("GetItem", "PutItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "ConditionCheckItem", "DeleteItem"),
      CALL_TREES,
      onQueue("SendMessage"),
      sealing(["notify-credentials", "notify-token"], "Encrypt"),
    ],
  },
  {
    id: "A2aJsonRpc",
    route: "a2a-json-rpc",
    description: "POST /v1/agents/{agent}/a2a/jsonrpc",
    timeout: 900,
    longPoll: true,
    env: { FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId", FORGEBENCH_PUSH_QUEUE_URL: "queueUrl" },
    grants: [
      RECORD_KEY_USE,
      onBodies("PutObject", "GetObject"),
      keyViaS3("GenerateDataKey", "Decrypt"),
      onTable("GetItem", "PutItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "ConditionCheckItem", "DeleteItem"),
      CALL_TREES,
      onIndex("pairs", "Query"),
      onQueue("SendMessage"),
      sealing(["notify-credentials", "notify-token"], "Encrypt"),
      sealing(["notify-token"], "Decrypt"),
      onTable("Query"),
    ],
  },
  {
    id: "PostTaskResult",
    route: "post-task-result",
    description: "POST /v1/agents/me/tasks/{task_id}/result",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onBodies("PutObject", "GetObject"),
      keyViaS3("GenerateDataKey", "Decrypt"),
      onTable("GetItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "PutItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "ReportTaskProgress",
    route: "report-task-progress",
    description: "POST /v1/agents/me/tasks/{task_id}/progress",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onBodies("PutObject", "GetObject"),
      keyViaS3("GenerateDataKey", "Decrypt"),
      onTable("GetItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "PutItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "ListAgentKeys",
    route: "list-agent-keys",
    description: "GET /v1/agents/{agent}/keys",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "Query"),
    ],
  },
  {
    id: "ListMembers",
    route: "list-members",
    description: "GET /v1/members",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "Query"),
    ],
  },
  {
    id: "CreateMemberKey",
    route: "create-member-key",
    description: "POST /v1/members/{member_id}/keys",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "Query", "PutItem", "UpdateItem"),
    ],
  },
  {
    id: "RevokeMemberKey",
    route: "revoke-member-key",
    description: "DELETE /v1/members/{member_id}/keys/{key_id}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "Query", "DeleteItem", "UpdateItem", "PutItem"),
    ],
  },
  {
    id: "RevokeAgentKey",
    route: "revoke-agent-key",
    description: "DELETE /v1/agents/{agent}/keys/{key_id}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "DeleteItem", "UpdateItem", "PutItem", "Query"),
    ],
  },
  {
    id: "RevokeBinding",
    route: "revoke-binding",
    description: "DELETE /v1/agents/{agent}/agents/{binding_id}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem"),
    ],
  },
  {
    id: "UpdateBinding",
    route: "update-binding",
    description: "PATCH /v1/agents/{agent}/agents/{binding_id}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem", "UpdateItem"),
    ],
  },
  {
    id: "SweepDeadlines",
    route: "sweep-deadlines",
    description: "Fails claimed tasks whose callee missed its claim deadline, re-enqueues lost push deliveries and notifications, and indexes the words of tasks whose indexing failed.",
    timeout: 60,
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_BODY_BUCKET: "bucketName" },
    grants: [
      onTableAndIndexes("GetItem", "Query", "UpdateItem", "PutItem", "BatchGetItem", "BatchWriteItem"),
      onBodies("GetObject"),
      keyViaS3("Decrypt"),
      onQueue("SendMessage"),
    ],
    trigger: { kind: 'schedule', id: "EveryMinute", expression: "rate(1 minute)" },
  },
  {
    id: "UpdateAgent",
    route: "update-agent",
    description: "PATCH /v1/agents/{agent}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem", "Query", "UpdateItem", "DeleteItem"),
    ],
  },
  {
    id: "SetEndpoint",
    route: "set-endpoint",
    description: "PUT /v1/agents/{agent}/endpoint",
    env: { FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem"),
      ENDPOINT_HEALTH("ForgetEndpointHealth", "DeleteItem"),
      sealing(["endpoint-secret"], "Encrypt"),
    ],
  },
  {
    id: "ListDeliveryAttempts",
    route: "list-delivery-attempts",
    description: "GET /v1/agents/{agent}/tasks/{task_id}/attempts",
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query"),
    ],
  },
  {
    id: "GetEndpointHealth",
    route: "get-endpoint-health",
    description: "GET /v1/agents/{agent}/endpoint/health",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem"),
    ],
  },
  {
    id: "EnableEndpoint",
    route: "enable-endpoint",
    description: "POST /v1/agents/{agent}/endpoint/enable",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem"),
      ENDPOINT_HEALTH("EndEndpointFailures", "UpdateItem"),
    ],
  },
  {
    id: "RedriveDeliveries",
    route: "redrive-deliveries",
    description: "POST /v1/agents/{agent}/endpoint/redrive",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl" },
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem", "UpdateItem", "BatchGetItem"),
      onIndex("inbound_tasks", "Query"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "ReplayDelivery",
    route: "replay-delivery",
    description: "POST /v1/agents/{agent}/tasks/{task_id}/replay",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl" },
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem", "UpdateItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "ReplayNotification",
    route: "replay-notification",
    description: "POST /v1/agents/{agent}/tasks/{task_id}/notifications/{config_id}/replay",
    env: { FORGEBENCH_PUSH_QUEUE_URL: "queueUrl" },
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem", "UpdateItem"),
      onQueue("SendMessage"),
    ],
  },
  {
    id: "GetAgentCard",
    route: "get-agent-card",
    description: "GET /v1/agents/{agent}/.well-known/agent-card.json",
    env: { FORGEBENCH_KMS_KEY_ID: "keyId", FORGEBENCH_PUBLIC_URL: "publicUrl" },
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query", "PutItem", "UpdateItem"),
      sealing(["card-signing"], "Encrypt", "Decrypt"),
    ],
  },
  {
    id: "ListAgentCards",
    route: "list-agent-cards",
    description: "GET /v1/agents/cards",
    env: { FORGEBENCH_KMS_KEY_ID: "keyId", FORGEBENCH_PUBLIC_URL: "publicUrl" },
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query", "PutItem", "UpdateItem"),
      sealing(["card-signing"], "Encrypt", "Decrypt"),
    ],
  },
  {
    id: "GetSigningKeys",
    route: "get-signing-keys",
    description: "GET /v1/billing/export/pubkey",
    env: { FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query", "PutItem", "UpdateItem"),
      sealing(["card-signing", "webhook-signing"], "Encrypt"),
    ],
  },
  {
    id: "RotateSigningKey",
    route: "rotate-signing-key",
    description: "POST /v1/signing-keys/rotate",
    env: { FORGEBENCH_KMS_KEY_ID: "keyId", FORGEBENCH_OPERATOR_KEY_HASH: "operatorKeyHash" },
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query", "PutItem", "UpdateItem"),
      sealing(["card-signing", "webhook-signing"], "Encrypt"),
    ],
  },
  {
    id: "RetireSigningKey",
    route: "retire-signing-key",
    description: "POST /v1/signing-keys/{kid}/retire",
    env: { FORGEBENCH_OPERATOR_KEY_HASH: "operatorKeyHash" },
    grants: [
      onTable("GetItem", "Query", "UpdateItem", "ConditionCheckItem"),
    ],
  },
  {
    id: "PutTool",
    route: "put-tool",
    description: "PUT /v1/agents/{agent}/tools/{tool}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "Query", "PutItem", "UpdateItem"),
    ],
  },
  {
    id: "DeleteTool",
    route: "delete-tool",
    description: "DELETE /v1/agents/{agent}/tools/{tool}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "Query", "DeleteItem", "PutItem", "UpdateItem"),
    ],
  },
  {
    id: "ListTools",
    route: "list-tools",
    description: "GET /v1/agents/{agent}/tools",
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query"),
    ],
  },
  {
    id: "ListCalls",
    route: "list-calls",
    description: "GET /v1/calls",
    grants: [
      RECORD_KEY_USE,
      onTableAndIndexes("GetItem", "Query"),
    ],
  },
  {
    id: "GetTenantSettings",
    route: "get-tenant-settings",
    description: "GET /v1/tenant/settings",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem"),
    ],
  },
  {
    id: "ListIssuers",
    route: "list-issuers",
    description: "GET /v1/issuers",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem"),
    ],
  },
  {
    id: "TrustIssuer",
    route: "trust-issuer",
    description: "POST /v1/issuers",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem"),
    ],
  },
  {
    id: "UpdateIssuer",
    route: "update-issuer",
    description: "PATCH /v1/issuers/{issuer_id}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem"),
    ],
  },
  {
    id: "DistrustIssuer",
    route: "distrust-issuer",
    description: "DELETE /v1/issuers/{issuer_id}",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "PutItem", "DeleteItem"),
    ],
  },
  {
    id: "GetGatewayResourceMetadata",
    route: "get-gateway-resource-metadata",
    description: "GET /.well-known/oauth-protected-resource (the gateway's metadata; no AWS access)",
    grants: [],
  },
  {
    // The JWKS of GetSigningKeys without a key: no RecordKeyUse (no key is read), and every table
    // call held to the signing keys' partitions, since anyone may invoke it.
    id: "GetPublicSigningKeys",
    route: "get-public-signing-keys",
    description: "GET /.well-known/jwks.json (the JWKS of GET /v1/billing/export/pubkey, without a key)",
    env: { FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      {
        sid: "SigningKeys",
        actions: ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"],
        on: ["table"],
        leadingKeys: ["SIGNING#*"],
      },
      sealing(["card-signing", "webhook-signing"], "Encrypt"),
    ],
  },
  {
    id: "GetAgentResourceMetadata",
    route: "get-agent-resource-metadata",
    description: "GET /v1/agents/{agent}/.well-known/oauth-protected-resource",
    grants: [
      onTable("GetItem"),
    ],
  },
  {
    id: "ConsolePage",
    route: "console-page",
    description: "GET /console (the console's page; no AWS access)",
    grants: [],
  },
  {
    id: "ConsoleAsset",
    route: "console-asset",
    description: "GET /console/{asset} (the console's files; no AWS access)",
    grants: [],
  },
  {
    id: "CreateConsoleSession",
    route: "create-console-session",
    description: "POST /console/session",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem"),
      { sid: "OpenSessions", actions: ["dynamodb:PutItem"], on: ["table"], leadingKeys: ["SESSION#*"] },
    ],
  },
  {
    id: "GetConsoleSession",
    route: "get-console-session",
    description: "GET /console/session",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem"),
    ],
  },
  {
    id: "DeleteConsoleSession",
    route: "delete-console-session",
    description: "DELETE /console/session",
    grants: [
      { sid: "EndSessions", actions: ["dynamodb:DeleteItem"], on: ["table"], leadingKeys: ["SESSION#*"] },
    ],
  },
  {
    id: "UpdateTenantSettings",
    route: "update-tenant-settings",
    description: "PATCH /v1/tenant/settings",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "UpdateItem", "PutItem"),
    ],
  },
  {
    id: "GetTenantPolicies",
    route: "get-tenant-policies",
    description: "GET /v1/tenant/policies",
    grants: [RECORD_KEY_USE, onTable("GetItem")],
  },
  {
    id: "UpdateTenantPolicies",
    route: "update-tenant-policies",
    description: "PATCH /v1/tenant/policies",
    grants: [
      RECORD_KEY_USE,
      onTable("GetItem", "UpdateItem", "PutItem"),
    ],
  },
  {
    id: "CheckCall",
    route: "check-call",
    description: "POST /v1/tenant/policies/check",
    grants: [RECORD_KEY_USE, onTable("GetItem")],
  },
  {
    id: "PushWorker",
    route: "push-worker",
    description: "Delivers push tasks to callee endpoints (SQS event source, partial batch failures).",
    timeout: 30,
    env: { FORGEBENCH_BODY_BUCKET: "bucketName", FORGEBENCH_PUSH_QUEUE_URL: "queueUrl", FORGEBENCH_KMS_KEY_ID: "keyId" },
    grants: [
      onBodies("PutObject", "GetObject"),
      keyViaS3("GenerateDataKey", "Decrypt"),
      onTableAndIndexes("GetItem", "Query", "PutItem", "UpdateItem", "BatchGetItem", "BatchWriteItem", "DeleteItem"),
      sealing(["endpoint-secret"], "Decrypt"),
      sealing(["webhook-signing"], "Encrypt", "Decrypt"),
      onQueue("ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility", "GetQueueAttributes", "SendMessage"),
      sealing(["notify-credentials", "notify-token"], "Decrypt"),
    ],
    trigger: { kind: 'pushQueue', id: "Push", batchSize: 10, reportBatchItemFailures: true },
  },
];
