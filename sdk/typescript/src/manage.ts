/**
 * The tenant's management APIs beside `agents`: `tenants` (operator key), `members`, `audit`,
 * `calls`, `signingKeys` (operator key to change them), `settings`, `policies` and `issuers`. Who may call what is in
 * docs/api.md; a key that may not is refused with `PermissionDeniedError` (403).
 */

import type { Transport } from "./transport.js";
import type {
  AuditEntry,
  AuditOutcome,
  Call,
  CallCheck,
  CallCheckIn,
  IssuerRemoved,
  KeyCreated,
  KeyRevoked,
  Member,
  MemberCreated,
  MemberRole,
  PolicyPatch,
  RetiredSigningKey,
  SigningKeyId,
  SigningKeyPurpose,
  SubjectGrantIn,
  TenantCreated,
  TenantPolicies,
  TenantPoliciesPatch,
  TenantSettings,
  TenantSettingsPatch,
  TrustedIssuer,
  TrustedIssuerIn,
} from "./types.js";
// Types only: webhooks.ts verifies with node:crypto, which this module must not load (edge runtimes).
import type { Jwks } from "./webhooks.js";
import { ForgebenchError } from "./errors.js";
import { hideSecret, itemsOf, objectOf, pageOf, segment, type RequestOptions } from "./wire.js";

/** `forgebench.tenants`: new tenants, with the operator key. */
export class Tenants {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Creates a tenant and its first admin key (`POST /v1/tenants`, operator key). The answer's
   * `admin_key` is shown once and kept out of logs (not enumerable). Not retried after a lost
   * answer: a repeat would make a second tenant.
   */
  async create(name: string, options: RequestOptions = {}): Promise<TenantCreated> {
    const response = await this.#transport.request({
      method: "POST",
      path: "/v1/tenants",
      body: { name },
      signal: options.signal,
    });
    return hideSecret(objectOf<TenantCreated>(response, ["tenant_id", "name", "admin_key"], "a new tenant"), "admin_key");
  }
}

/** `forgebench.members`: the tenant's people and their keys (an admin key). */
export class Members {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Every member of the tenant with every key it ever held, never a secret (`GET /v1/members`). */
  async list(options: RequestOptions = {}): Promise<Member[]> {
    return itemsOf<Member>(
      await this.#transport.request({ method: "GET", path: "/v1/members", signal: options.signal }),
      "a list of members",
    );
  }

  /**
   * Adds a person (`POST /v1/members`) and answers with its first key, shown once and kept out
   * of logs (not enumerable). Not retried after a lost answer.
   */
  async create(name: string, role: MemberRole, options: RequestOptions = {}): Promise<MemberCreated> {
    const response = await this.#transport.request({
      method: "POST",
      path: "/v1/members",
      body: { name, role },
      signal: options.signal,
    });
    return hideSecret(objectOf<MemberCreated>(response, ["member_id", "name", "role", "key"], "a new member"), "key");
  }

  /** Issues another key for a member (`POST /v1/members/{memberId}/keys`), shown once (not enumerable). */
  async issueKey(memberId: string, options: RequestOptions = {}): Promise<KeyCreated> {
    const response = await this.#transport.request({
      method: "POST",
      path: `/v1/members/${segment(memberId)}/keys`,
      signal: options.signal,
    });
    return hideSecret(objectOf<KeyCreated>(response, ["key_id", "key"], "a new key"), "key");
  }

  /**
   * Revokes a member's key (`DELETE /v1/members/{memberId}/keys/{keyId}`); never the tenant's
   * last live admin key (`ConflictError`).
   */
  async revokeKey(memberId: string, keyId: string, options: RequestOptions = {}): Promise<KeyRevoked> {
    const response = await this.#transport.request({
      method: "DELETE",
      path: `/v1/members/${segment(memberId)}/keys/${segment(keyId)}`,
      signal: options.signal,
    });
    return objectOf<KeyRevoked>(response, ["key_id", "revoked"], "a revoked key");
  }
}

/** The filters of `GET /v1/audit`, every one optional; a page reads on until it holds `limit` matching entries (or spends its read budget). */
export interface AuditQuery {
  /** Entries whose actor or target is this agent. */
  agent?: string;
  /** Entries whose action starts with this (`binding.`, `agent.key.revoke`, ...). */
  action?: string;
  outcome?: AuditOutcome;
  /** Only entries from this moment on (a `Date`, or RFC 3339 text). */
  since?: Date | string;
  /** Entries per page, 1-100 (the gateway's default: 50). */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  signal?: AbortSignal;
}

/** One page of the audit log, newest first. A filtered page may be short and still lead on. */
export interface AuditPage {
  entries: AuditEntry[];
  /** The next page's `cursor`; `null` on the last page. */
  nextCursor: string | null;
}

/** `forgebench.audit`: the tenant's audit log (an admin or viewer key). */
export class Audit {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** One page of the audit log, newest first (`GET /v1/audit`); or use `iter`. */
  async list(query: AuditQuery = {}): Promise<AuditPage> {
    const { status, body } = await this.#transport.request({
      method: "GET",
      path: "/v1/audit",
      query: {
        agent: query.agent,
        action: query.action,
        outcome: query.outcome,
        since: query.since instanceof Date ? query.since.toISOString() : query.since,
        limit: query.limit,
        cursor: query.cursor,
      },
      signal: query.signal,
    });
    const page = pageOf(status, body, "items", "a page of the audit log");
    return { entries: page.items as AuditEntry[], nextCursor: page.nextCursor };
  }

  /**
   * Every entry of the log that the filters keep, page after page (`limit` is the page size):
   * `for await (const entry of forgebench.audit.iter({ action: "binding." }))`.
   */
  async *iter(query: AuditQuery = {}): AsyncGenerator<AuditEntry, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.list({ ...query, cursor });
      yield* page.entries;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }
}

/** `forgebench.calls`: the lineage of governed calls (an admin or viewer key). */
export class Calls {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Every call of one lineage tree, oldest first (`GET /v1/calls?root_call_id=`): pass a task's
   * `root_call_id` (or the `call_id` of a task opened with no parent).
   */
  async list(rootCallId: string, options: RequestOptions = {}): Promise<Call[]> {
    return itemsOf<Call>(
      await this.#transport.request({
        method: "GET",
        path: "/v1/calls",
        query: { root_call_id: rootCallId },
        signal: options.signal,
      }),
      "a list of calls",
    );
  }
}

/** The JWKS route (webhooks.ts's `JWKS_PATH`, not imported from there: see above). */
const SIGNING_KEYS_PATH = "/v1/billing/export/pubkey";

/** Which signing key a rotation replaces. */
export interface RotateOptions extends RequestOptions {
  /** `card-signing` (the default) or `webhook-signing`. */
  purpose?: SigningKeyPurpose;
}

/** `forgebench.signingKeys`: the gateway's signing keys (reading: any key; changing: the operator key). */
export class SigningKeys {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The JWKS of every signing key not retired, of both purposes (`GET /v1/billing/export/pubkey`). */
  async list(options: RequestOptions = {}): Promise<Jwks> {
    const { status, body } = await this.#transport.request({ method: "GET", path: SIGNING_KEYS_PATH, signal: options.signal });
    if (typeof body === "object" && body !== null && "keys" in body && Array.isArray(body.keys)) return body as Jwks;
    throw new ForgebenchError("the gateway's JWKS has no `keys` list", status, body);
  }

  /**
   * Makes a new active key of `purpose` (`POST /v1/signing-keys/rotate`, operator key); the old
   * public key stays listed, so what it signed still verifies. Not retried after a lost answer.
   */
  async rotate(options: RotateOptions = {}): Promise<SigningKeyId> {
    const response = await this.#transport.request({
      method: "POST",
      path: "/v1/signing-keys/rotate",
      body: options.purpose === undefined ? {} : { purpose: options.purpose },
      signal: options.signal,
    });
    return objectOf<SigningKeyId>(response, ["kid", "purpose"], "a signing key id");
  }

  /**
   * Drops a replaced key from the JWKS for good (`POST /v1/signing-keys/{kid}/retire`, operator
   * key). The active key, or one replaced within the signing-key cache time, is a `ConflictError`.
   */
  async retire(kid: string, options: RequestOptions = {}): Promise<RetiredSigningKey> {
    const response = await this.#transport.request({
      method: "POST",
      path: `/v1/signing-keys/${segment(kid)}/retire`,
      signal: options.signal,
      // retiring a retired key changes nothing
      repeatable: true,
    });
    return objectOf<RetiredSigningKey>(response, ["kid", "purpose", "retired"], "a retired signing key");
  }
}

const TENANT_SETTINGS_FIELDS = [
  "tenant_id",
  "word_search",
  "max_call_depth",
  "refuse_cycles",
  "max_fan_out",
  "max_open_in_tree",
] as const;

/** `forgebench.settings`: the tenant's settings (reading: admin or viewer; changing: admin). */
export class Settings {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The tenant's settings (`GET /v1/tenant/settings`). */
  async get(options: RequestOptions = {}): Promise<TenantSettings> {
    const response = await this.#transport.request({ method: "GET", path: "/v1/tenant/settings", signal: options.signal });
    return objectOf<TenantSettings>(response, TENANT_SETTINGS_FIELDS, "the tenant's settings");
  }

  /** Changes the tenant's settings and answers with them (`PATCH /v1/tenant/settings`); audited. */
  async update(patch: TenantSettingsPatch, options: RequestOptions = {}): Promise<TenantSettings> {
    const response = await this.#transport.request({
      method: "PATCH",
      path: "/v1/tenant/settings",
      body: patch,
      signal: options.signal,
    });
    return objectOf<TenantSettings>(response, TENANT_SETTINGS_FIELDS, "the tenant's settings");
  }
}

const TENANT_POLICIES_FIELDS = ["version", "items"] as const;

/**
 * `forgebench.policies`: the tenant's policies (the gateway's docs, "Tenant policies"; reading
 * and checking: admin or viewer; changing: admin). A policy is one Cedar `forbid` over the
 * caller agent, the action (`open`, `answer`, `cancel`, `read`), the callee and the call's
 * context; a live binding permits a call, a policy can only forbid it. An enforced policy
 * refuses what it forbids (the gate's `PermissionDeniedError`, `not_permitted`); a tried one
 * (`dry_run`) refuses nothing, and the audit log records what it would have refused (`outcome:
 * "would_refuse"`).
 */
export class Policies {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The tenant's policies by name, and the set's version (`GET /v1/tenant/policies`). */
  async get(options: RequestOptions = {}): Promise<TenantPolicies> {
    const response = await this.#transport.request({ method: "GET", path: "/v1/tenant/policies", signal: options.signal });
    return objectOf<TenantPolicies>(response, TENANT_POLICIES_FIELDS, "the tenant's policies");
  }

  /**
   * Sets, changes or removes policies by name and answers with the set as saved
   * (`PATCH /v1/tenant/policies`); each one set or removed is audited (`tenant.policy.set`,
   * `tenant.policy.remove`). Each value is a merge patch of that policy (`PolicyPatch`), or
   * `null` to remove it; a new policy needs its `policy` and is tried (`dry_run`) unless `mode`
   * says `enforce`. The whole set is validated before anything is saved: a policy that does not
   * parse, is not one `forbid`, or does not hold to the schema is a `BadRequestError` naming it,
   * and nothing changes. Not retried after a lost answer, like every `PATCH`.
   */
  async update(policies: Record<string, PolicyPatch | null>, options: RequestOptions = {}): Promise<TenantPolicies> {
    if (typeof policies !== "object" || policies === null || Array.isArray(policies)) {
      throw new TypeError("policies must be an object of policy names to patches (null removes one)");
    }
    const body: TenantPoliciesPatch = { policies: { ...policies } };
    const response = await this.#transport.request({
      method: "PATCH",
      path: "/v1/tenant/policies",
      body,
      signal: options.signal,
    });
    return objectOf<TenantPolicies>(response, TENANT_POLICIES_FIELDS, "the tenant's policies");
  }

  /**
   * Whether the gate would allow a call now, and why (`POST /v1/tenant/policies/check`): the
   * binding, the callee, the contract's skills (for `open`) and the policies are judged; not the
   * call-tree counts nor the contract's rate, concurrency and quota. It records nothing, so it
   * is retried like a read. An agent that is not the tenant's is a `NotFoundError`.
   */
  async check(call: CallCheckIn, options: RequestOptions = {}): Promise<CallCheck> {
    const response = await this.#transport.request({
      method: "POST",
      path: "/v1/tenant/policies/check",
      body: call,
      signal: options.signal,
      repeatable: true,
    });
    return objectOf<CallCheck>(response, ["allowed", "reason", "policies", "would_refuse"], "a call check");
  }
}

const TRUSTED_ISSUER_FIELDS = ["id", "issuer", "audience", "discovery_url", "subjects"] as const;

/**
 * `forgebench.issuers`: the OpenID Connect issuers the tenant trusts, each for one audience, and
 * the subjects whose tokens sign in as an agent or a member (reading: admin, member, viewer;
 * changing: admin). Such a token then acts exactly as that agent's or member's key would.
 */
export class Issuers {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Every issuer the tenant trusts (`GET /v1/issuers`). */
  async list(options: RequestOptions = {}): Promise<TrustedIssuer[]> {
    return itemsOf<TrustedIssuer>(
      await this.#transport.request({ method: "GET", path: "/v1/issuers", signal: options.signal }),
      "a list of trusted issuers",
    );
  }

  /**
   * Trusts `issuer` (an https URL exactly as its tokens carry it in `iss`; plain http only on a
   * loopback host) for tokens whose `aud` is `audience` (`POST /v1/issuers`); `subjects` lists
   * who they sign in as. The gateway reads the issuer's discovery document: the answer's
   * `discovery` says whether it could (`read`), and if not, why (`problem`); one it cannot read
   * does not stop the trust. An address the gateway's outbound guard refuses (a metadata or
   * private address) is a `PermissionDeniedError`; a pair any tenant already trusts, a
   * `ConflictError`; an unknown agent or member, a `NotFoundError`. Not retried after a lost
   * answer.
   */
  async trust(
    issuer: string,
    audience: string,
    subjects?: readonly SubjectGrantIn[],
    options: RequestOptions = {},
  ): Promise<TrustedIssuer> {
    const body: TrustedIssuerIn = { issuer, audience };
    if (subjects !== undefined) body.subjects = [...subjects];
    const response = await this.#transport.request({ method: "POST", path: "/v1/issuers", body, signal: options.signal });
    return objectOf<TrustedIssuer>(response, TRUSTED_ISSUER_FIELDS, "a trusted issuer");
  }

  /**
   * Replaces the subjects an issuer lists (`PATCH /v1/issuers/{issuerId}`); an empty list signs
   * no one in. Not retried after a lost answer, like every `PATCH`.
   */
  async update(issuerId: string, subjects: readonly SubjectGrantIn[], options: RequestOptions = {}): Promise<TrustedIssuer> {
    const response = await this.#transport.request({
      method: "PATCH",
      path: `/v1/issuers/${segment(issuerId)}`,
      body: { subjects: [...subjects] },
      signal: options.signal,
    });
    return objectOf<TrustedIssuer>(response, TRUSTED_ISSUER_FIELDS, "a trusted issuer");
  }

  /** Trusts an issuer no more (`DELETE /v1/issuers/{issuerId}`): its tokens sign in no more. */
  async distrust(issuerId: string, options: RequestOptions = {}): Promise<IssuerRemoved> {
    const response = await this.#transport.request({
      method: "DELETE",
      path: `/v1/issuers/${segment(issuerId)}`,
      signal: options.signal,
    });
    return objectOf<IssuerRemoved>(response, ["id", "removed"], "a removed issuer");
  }
}
