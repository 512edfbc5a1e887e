/**
 * The hand-written management types against the gateway's OpenAPI document
 * (`GET /openapi.json`, infra/openapi.yaml): each type's property names, and which of them are
 * required, must be the schema's. The tables below are checked against the types by the
 * compiler (every key of the type, no other), and against the document when the test runs, so
 * a schema that gains, drops or changes the requiredness of a field fails here until the type
 * follows.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type {
  Agent,
  AgentEndpoint,
  AgentFields,
  AgentPatch,
  AuditEntry,
  Binding,
  BindingContract,
  BindingContractPatch,
  BindingLimits,
  BindingLimitsPatch,
  BindingPatch,
  BindingUsage,
  Bindings,
  Call,
  CallCheck,
  CallCheckIn,
  DeliveryAttempt,
  EndpointAttemptCounts,
  EndpointDisableAfter,
  EndpointDisabled,
  EndpointHealth,
  EndpointIn,
  IssuerRemoved,
  KeyCreated,
  KeyInfo,
  KeyRevoked,
  Member,
  MemberCreated,
  PolicyPatch,
  Redriven,
  Replayed,
  ReplayedNotification,
  RetiredSigningKey,
  SigningKeyId,
  SubjectGrant,
  SubjectGrantIn,
  TenantCreated,
  TenantPolicies,
  TenantPoliciesPatch,
  TenantPolicy,
  TenantSettings,
  TenantSettingsPatch,
  Tool,
  ToolIn,
  ToolRemoved,
  TrustedIssuer,
  TrustedIssuerIn,
  TrustedIssuerPatch,
} from "@seedlinglabs/forgebench-sdk";

import { baseUrl, noGateway } from "./support/gateway.js";

/** The keys of `T` that are not optional (of a union: not optional in any of its members). */
type RequiredKeys<T> = { [K in keyof T & string]: RequiredIn<T, K> extends "required" ? K : never }[keyof T & string];
/** Whether `K` is required in `T`, member by member of a union. */
type RequiredIn<T, K extends keyof T> = T extends unknown ? (object extends Pick<T, K> ? "optional" : "required") : never;

interface Model {
  /**
   * Where the schema is: a component name (or a route and its method, for the operation's JSON
   * request body), then properties whose schema it is (an array property's: its items').
   */
  path: string[];
  properties: string[];
  required: string[] | undefined;
}

/** A type's keys, all of them and the required ones, checked by the compiler. */
function model<T>(
  path: string[],
  properties: { [K in keyof T]-?: true },
  required?: { [K in RequiredKeys<T>]: true },
): Model {
  return {
    path,
    properties: Object.keys(properties).sort(),
    required: required === undefined ? undefined : Object.keys(required).sort(),
  };
}

/** The route of one binding, whose `PATCH` sets its limits and contract. */
const BINDING_ROUTE = "/v1/agents/{agent}/agents/{binding_id}";

const MODELS: Record<string, Model> = {
  TenantCreated: model<TenantCreated>(["TenantCreated"], { tenant_id: true, name: true, admin_key: true }, { tenant_id: true, name: true, admin_key: true }),
  KeyInfo: model<KeyInfo>(
    ["KeyInfo"],
    { key_id: true, created_at: true, last_used_at: true, revoked_at: true },
    { key_id: true, created_at: true, last_used_at: true, revoked_at: true },
  ),
  KeyCreated: model<KeyCreated>(["KeyCreated"], { key_id: true, key: true }, { key_id: true, key: true }),
  KeyRevoked: model<KeyRevoked>(["KeyRevoked"], { key_id: true, revoked: true }, { key_id: true, revoked: true }),
  Member: model<Member>(
    ["Member"],
    { member_id: true, name: true, role: true, created_at: true, keys: true },
    { member_id: true, name: true, role: true, created_at: true, keys: true },
  ),
  MemberCreated: model<MemberCreated>(
    ["MemberCreated"],
    { member_id: true, name: true, role: true, key_id: true, key: true },
    { member_id: true, name: true, role: true, key: true },
  ),
  Agent: model<Agent>(
    ["Agent"],
    {
      id: true,
      name: true,
      description: true,
      owner_member_id: true,
      status: true,
      endpoint: true,
      claim_timeout_seconds: true,
      input_modes: true,
      created_at: true,
      updated_at: true,
    },
    { id: true, name: true, status: true, created_at: true },
  ),
  AgentEndpoint: model<AgentEndpoint>(
    ["Agent", "endpoint"],
    { url: true, auth: true, allow_private_network: true, disabled: true },
    { url: true },
  ),
  AgentIn: model<AgentFields & { name: string }>(
    ["AgentIn"],
    { name: true, description: true, owner_member_id: true, claim_timeout_seconds: true, input_modes: true },
    { name: true },
  ),
  AgentPatch: model<AgentPatch>(["AgentPatch"], { status: true, description: true, claim_timeout_seconds: true, input_modes: true }, {}),
  Binding: model<Binding>(
    ["Binding"],
    {
      id: true,
      caller_agent_id: true,
      callee_agent_id: true,
      source: true,
      revoked: true,
      approved_at: true,
      limits: true,
      contract: true,
      usage: true,
      created_at: true,
      updated_at: true,
    },
    { id: true, caller_agent_id: true, callee_agent_id: true, source: true, revoked: true, approved_at: true, limits: true, contract: true },
  ),
  // every binding shows both objects with all their fields; `usage` only the list and the PATCH
  BindingLimits: model<BindingLimits>(
    ["Binding", "limits"],
    { max_call_depth: true, refuse_cycles: true, max_fan_out: true, max_open_in_tree: true },
    { max_call_depth: true, refuse_cycles: true, max_fan_out: true, max_open_in_tree: true },
  ),
  BindingContract: model<BindingContract>(
    ["Binding", "contract"],
    { skills: true, rate_per_minute: true, max_concurrent: true, daily_quota: true },
    { skills: true, rate_per_minute: true, max_concurrent: true, daily_quota: true },
  ),
  BindingUsage: model<BindingUsage>(["Binding", "usage"], { minute: true, day: true, open: true }, { minute: true, day: true, open: true }),
  // the PATCH's body, found by its route (its schema's name is the document's business)
  BindingPatch: model<BindingPatch>([BINDING_ROUTE, "patch"], { limits: true, contract: true }, {}),
  BindingLimitsPatch: model<BindingLimitsPatch>(
    [BINDING_ROUTE, "patch", "limits"],
    { max_call_depth: true, refuse_cycles: true, max_fan_out: true, max_open_in_tree: true },
  ),
  BindingContractPatch: model<BindingContractPatch>(
    [BINDING_ROUTE, "patch", "contract"],
    { skills: true, rate_per_minute: true, max_concurrent: true, daily_quota: true },
  ),
  Bindings: model<Bindings>(["Bindings"], { outbound: true, inbound: true }, { outbound: true, inbound: true }),
  EndpointIn: model<EndpointIn>(["EndpointIn"], { url: true, auth: true, clear_auth: true, allow_private_network: true }),
  Tool: model<Tool>(["Tool"], { name: true, description: true, tags: true }, { name: true, description: true, tags: true }),
  ToolIn: model<ToolIn>(["ToolIn"], { description: true, tags: true }, { description: true }),
  ToolRemoved: model<ToolRemoved>(["ToolRemoved"], { name: true, removed: true }, { name: true, removed: true }),
  DeliveryAttempt: model<DeliveryAttempt>(
    ["AttemptList", "items"],
    { attempt: true, at: true, status: true, latency_ms: true, error: true },
    { attempt: true, at: true, latency_ms: true },
  ),
  EndpointDisabled: model<EndpointDisabled>(["EndpointDisabled"], { at: true, reason: true }, { at: true, reason: true }),
  EndpointHealth: model<EndpointHealth>(
    ["EndpointHealth"],
    {
      agent_id: true,
      url: true,
      state: true,
      success_rate: true,
      attempts: true,
      consecutive_failures: true,
      failing_since: true,
      last_error: true,
      last_failure_at: true,
      last_success_at: true,
      disabled: true,
      disable_after: true,
    },
    {
      agent_id: true,
      url: true,
      state: true,
      success_rate: true,
      attempts: true,
      consecutive_failures: true,
      failing_since: true,
      last_error: true,
      last_failure_at: true,
      last_success_at: true,
      disabled: true,
      disable_after: true,
    },
  ),
  EndpointAttemptCounts: model<EndpointAttemptCounts>(
    ["EndpointHealth", "attempts"],
    { ok: true, failed: true, since: true },
    { ok: true, failed: true, since: true },
  ),
  EndpointDisableAfter: model<EndpointDisableAfter>(
    ["EndpointHealth", "disable_after"],
    { failures: true, seconds: true },
    { failures: true, seconds: true },
  ),
  // the redrive's body, found by its route: what `redriveDeliveries(agent, since)` sends
  RedriveIn: model<{ since: string }>(["/v1/agents/{agent}/endpoint/redrive", "post"], { since: true }, { since: true }),
  Redriven: model<Redriven>(["Redriven"], { redriven: true, task_ids: true, next_since: true }, { redriven: true, task_ids: true, next_since: true }),
  Replayed: model<Replayed>(["Replayed"], { task_id: true, webhook_id: true }, { task_id: true, webhook_id: true }),
  ReplayedNotification: model<ReplayedNotification>(
    ["ReplayedNotification"],
    { task_id: true, config_id: true, event: true, webhook_id: true },
    { task_id: true, config_id: true, event: true, webhook_id: true },
  ),
  AuditEntry: model<AuditEntry>(
    ["AuditEntry"],
    { id: true, at: true, actor: true, action: true, target: true, outcome: true, reason: true, policy: true, call_id: true, parent_call_id: true, root_call_id: true, task_id: true, caller_agent_id: true, callee_agent_id: true, count: true },
    { id: true, at: true, actor: true, action: true, target: true, outcome: true },
  ),
  Call: model<Call>(
    ["CallList", "items"],
    { call_id: true, parent_call_id: true, root_call_id: true, task_id: true, caller_agent_id: true, callee_agent_id: true, at: true },
    { call_id: true, root_call_id: true, task_id: true, caller_agent_id: true, callee_agent_id: true, at: true },
  ),
  SigningKeyId: model<SigningKeyId>(["Kid"], { kid: true, purpose: true }, { kid: true, purpose: true }),
  RetiredSigningKey: model<RetiredSigningKey>(
    ["RetiredKey"],
    { kid: true, purpose: true, retired: true },
    { kid: true, purpose: true, retired: true },
  ),
  TenantSettings: model<TenantSettings>(
    ["TenantSettings"],
    { tenant_id: true, word_search: true, max_call_depth: true, refuse_cycles: true, max_fan_out: true, max_open_in_tree: true },
    { tenant_id: true, word_search: true, max_call_depth: true, refuse_cycles: true, max_fan_out: true, max_open_in_tree: true },
  ),
  TenantSettingsPatch: model<TenantSettingsPatch>(
    ["TenantSettingsPatch"],
    { word_search: true, max_call_depth: true, refuse_cycles: true, max_fan_out: true, max_open_in_tree: true },
    {},
  ),
  TenantPolicy: model<TenantPolicy>(
    ["TenantPolicy"],
    { name: true, policy: true, mode: true, description: true, updated_at: true },
    { name: true, policy: true, mode: true, description: true, updated_at: true },
  ),
  TenantPolicies: model<TenantPolicies>(["TenantPolicies"], { version: true, items: true }, { version: true, items: true }),
  // the PATCH's and the check's bodies, found by their routes
  TenantPoliciesPatch: model<TenantPoliciesPatch>(["/v1/tenant/policies", "patch"], { policies: true }, { policies: true }),
  PolicyPatch: model<PolicyPatch>(["TenantPolicyPatch"], { policy: true, mode: true, description: true }, {}),
  CallCheckIn: model<CallCheckIn>(
    ["/v1/tenant/policies/check", "post"],
    { caller: true, callee: true, skill: true, action: true, depth: true, root_caller: true },
    { caller: true, callee: true },
  ),
  CallCheck: model<CallCheck>(
    ["CallCheck"],
    { allowed: true, reason: true, policies: true, would_refuse: true },
    { allowed: true, reason: true, policies: true, would_refuse: true },
  ),
  TrustedIssuer: model<TrustedIssuer>(
    ["TrustedIssuer"],
    { id: true, issuer: true, audience: true, discovery_url: true, subjects: true, created_at: true, updated_at: true, discovery: true },
    { id: true, issuer: true, audience: true, discovery_url: true, subjects: true, created_at: true, updated_at: true },
  ),
  TrustedIssuerIn: model<TrustedIssuerIn>(["TrustedIssuerIn"], { issuer: true, audience: true, subjects: true }, { issuer: true, audience: true }),
  TrustedIssuerPatch: model<TrustedIssuerPatch>(["TrustedIssuerPatch"], { subjects: true }, { subjects: true }),
  // the list's items are the schema `TrustedIssuer`, whose `discovery` only the trust's answer holds
  TrustedIssuerListItem: model<TrustedIssuer>(
    ["TrustedIssuerList", "items"],
    { id: true, issuer: true, audience: true, discovery_url: true, subjects: true, created_at: true, updated_at: true, discovery: true },
  ),
  // a union (an agent's subject or a member's): every property of either, `subject` in both
  SubjectGrant: model<SubjectGrant>(["SubjectGrant"], { subject: true, agent_id: true, member_id: true }, { subject: true }),
  SubjectGrantIn: model<SubjectGrantIn>(["SubjectGrantIn"], { subject: true, agent: true, member_id: true }, { subject: true }),
  IssuerRemoved: model<IssuerRemoved>(["IssuerRemoved"], { id: true, removed: true }, { id: true, removed: true }),
};

type Schema = { $ref?: string; properties?: Record<string, Schema>; required?: string[]; items?: Schema };
type Operation = { requestBody?: { content?: Record<string, { schema?: Schema }> } };

describe("the management types follow the OpenAPI document", { skip: noGateway }, () => {
  test("every modelled schema has the type's properties, and the same ones required", async () => {
    const response = await fetch(`${baseUrl()}/openapi.json`);
    assert.equal(response.status, 200);
    const document = (await response.json()) as {
      components: { schemas: Record<string, Schema> };
      paths: Record<string, Record<string, Operation | undefined>>;
    };
    const schemas = document.components.schemas;
    const resolve = (schema: Schema | undefined): Schema | undefined =>
      schema?.$ref === undefined ? schema : resolve(schemas[schema.$ref.replace("#/components/schemas/", "")]);
    for (const [name, modelled] of Object.entries(MODELS)) {
      const [first, ...rest] = modelled.path;
      let schema: Schema | undefined;
      let steps = rest;
      if (first?.startsWith("/") === true) {
        // a route and its method: the operation's JSON request body
        const [method, ...after] = rest;
        schema = resolve(document.paths[first]?.[method ?? ""]?.requestBody?.content?.["application/json"]?.schema);
        steps = after;
      } else {
        schema = resolve(schemas[first ?? ""]);
      }
      // a step names a property: its schema, or its items' when it is an array
      for (const step of steps) {
        const property = resolve(schema?.properties?.[step]);
        schema = property?.items === undefined ? property : resolve(property.items);
      }
      assert.ok(schema?.properties !== undefined, `${modelled.path.join(".")}: no such object schema in the document`);
      assert.deepEqual(modelled.properties, Object.keys(schema.properties).sort(), `${name}: the properties of ${modelled.path.join(".")}`);
      if (modelled.required !== undefined) {
        assert.deepEqual(modelled.required, [...(schema.required ?? [])].sort(), `${name}: the required properties`);
      }
    }
  });
});
