/**
 * Verifying the gateway's signed POSTs: push deliveries on a callee's endpoint, and A2A push
 * notifications on a caller's webhook.
 *
 * Every POST the gateway pushes carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
 * `webhook-signature: v1a,<base64 Ed25519 signature over "{id}.{timestamp}.{body}">`, made with
 * one of the `webhook-signing` keys of the JWKS at `GET /v1/billing/export/pubkey`. One key signs
 * for every tenant, so the destination the body names is what binds a POST to one receiver.
 * `verifyDelivery` makes the checks of docs/api.md ("Signed deliveries"), in its order: the
 * timestamp, the signature, the destination (`destination`); and, given a `ReplayCache`, drops a
 * `webhook-id` already handled. `verifyNotification` makes the same checks on an A2A push
 * notification, whose body (an A2A `StreamResponse`) names its destination in the update's
 * `metadata` (the gateway's docs, "Push notifications").
 */

import { createPublicKey, verify, type KeyObject } from "node:crypto";

import { DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS } from "./client.js";
import { ForgebenchError } from "./errors.js";
import { Transport } from "./transport.js";

/** How far a delivery's `webhook-timestamp` may be from the receiver's clock, either way. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The `purpose` of the JWKS keys that sign deliveries (`card-signing` keys never do). */
export const WEBHOOK_SIGNING_PURPOSE = "webhook-signing";

/** The gateway's JWKS route (any key of the tenant reads it). */
export const JWKS_PATH = "/v1/billing/export/pubkey";

const SIGNATURE_PREFIX = "v1a,";

/** One key of the gateway's JWKS: an Ed25519 public key (OKP) with its `purpose`. */
export interface Jwk {
  kty: string;
  crv?: string;
  /** The public key, base64url without padding. */
  x?: string;
  kid?: string;
  alg?: string;
  use?: string;
  /** `webhook-signing` or `card-signing`. */
  purpose?: string;
  [member: string]: unknown;
}

/** The JWKS of `GET /v1/billing/export/pubkey`. */
export interface Jwks {
  keys: Jwk[];
}

/** Where a delivery was made: the callee's tenant, the callee agent, the endpoint URL as saved. */
export interface DeliveryDestination {
  tenant_id: string;
  agent_id: string;
  url: string;
}

/** A delivery's body: the task, the caller's newest message, and the destination. */
export interface Delivery {
  task_id: string;
  call_id: string;
  message: unknown;
  destination: DeliveryDestination;
  [member: string]: unknown;
}

/**
 * Where a notification was sent: the push notification config (its tenant, its task, its id) and
 * the receiver's URL exactly as saved on the config.
 */
export interface NotificationDestination {
  tenant_id: string;
  task_id: string;
  config_id: string;
  url: string;
}

/** The member of a notification's update `metadata` that holds `destination`. */
export const NOTIFICATION_METADATA_KEY = "forgebench";

/**
 * A notification's body: an A2A `StreamResponse` holding one update, `statusUpdate` or
 * `artifactUpdate`, whose `metadata.forgebench.destination` names where it was sent.
 */
export interface Notification {
  statusUpdate?: Record<string, unknown>;
  artifactUpdate?: Record<string, unknown>;
  [member: string]: unknown;
}

/** The check a delivery or a notification failed. */
export type WebhookCheck = "timestamp" | "signature" | "destination" | "replay";

/**
 * A delivery or a notification failed a check; `reason` says which one. The message names what
 * was wrong, never a header's value, the body, or the URLs compared. (`status` is 0: no gateway
 * response.)
 */
export class WebhookVerificationError extends ForgebenchError {
  readonly reason: WebhookCheck;

  constructor(reason: WebhookCheck, message: string) {
    super(`${reason} check failed: ${message}`, 0, null);
    this.reason = reason;
  }
}

/**
 * A request's headers: a fetch `Headers`, Node's `IncomingHttpHeaders` (`request.headers`), a
 * plain object, or `[name, value]` pairs. Names are matched case-insensitively.
 */
export type DeliveryHeaders =
  | Headers
  | Readonly<Record<string, string | readonly string[] | undefined>>
  | Iterable<readonly [string, string]>;

export interface VerifyDeliveryOptions {
  headers: DeliveryHeaders;
  /** The raw request body, exactly as received (a Buffer is a Uint8Array). */
  body: string | Uint8Array;
  jwks: Jwks;
  /** This endpoint's URL as saved on the agent (`PUT /v1/agents/{agent}/endpoint`). */
  url: string;
  /** This agent's id. */
  agentId: string;
  /** Default 300. */
  toleranceSeconds?: number;
  /** The time to check against; the clock by default. */
  now?: Date;
  /** Refuses (reason `replay`) a `webhook-id` it already accepted, after every other check. */
  replayCache?: ReplayCache;
}

/** What `verifyNotification` checks a notification against. */
export interface VerifyNotificationOptions {
  headers: DeliveryHeaders;
  /** The raw request body, exactly as received (a Buffer is a Uint8Array). */
  body: string | Uint8Array;
  jwks: Jwks;
  /** This receiver's URL exactly as saved on the push notification config. */
  url: string;
  /** When given, the config's id must be this. */
  configId?: string;
  /** When given, the config's task must be this. */
  taskId?: string;
  /** Default 300. */
  toleranceSeconds?: number;
  /** The time to check against; the clock by default. */
  now?: Date;
  /** Refuses (reason `replay`) a `webhook-id` it already accepted, after every other check. */
  replayCache?: ReplayCache;
}

/**
 * The `webhook-id`s already accepted, each kept until its timestamp leaves the tolerance (a
 * delivery older than that is refused by the timestamp check anyway). In memory: one per
 * receiving process; a receiver with several processes needs a shared store instead.
 */
export class ReplayCache {
  readonly #toleranceSeconds: number;
  readonly #expiry = new Map<string, number>();

  constructor(toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS) {
    this.#toleranceSeconds = toleranceSeconds;
  }

  get size(): number {
    return this.#expiry.size;
  }

  /** Records `webhookId`; `true` the first time, `false` when it is already held. */
  remember(webhookId: string, timestamp: number, now: Date = new Date()): boolean {
    const current = now.getTime() / 1000;
    for (const [held, expiry] of this.#expiry) {
      if (expiry < current) this.#expiry.delete(held);
    }
    if (this.#expiry.has(webhookId)) return false;
    this.#expiry.set(webhookId, timestamp + this.#toleranceSeconds);
    return true;
  }

  /**
   * Drops `webhookId`, so that the gateway's retry of that delivery is accepted again: for a
   * delivery whose handling failed (the push adapters answer 500 and the gateway retries).
   */
  forget(webhookId: string): void {
    this.#expiry.delete(webhookId);
  }
}

/**
 * The delivery (the parsed body) when the gateway signed it for this endpoint; throws a
 * `WebhookVerificationError` whose `reason` is the first check that failed: `timestamp`,
 * `signature`, `destination` (or `replay`).
 */
export function verifyDelivery(options: VerifyDeliveryOptions): Delivery {
  const { raw, webhookId, timestamp, now } = signedByTheGateway(options);
  const delivery = jsonOf(raw);
  const destination = isObject(delivery) ? delivery.destination : undefined;
  if (!isObject(destination)) throw new WebhookVerificationError("destination", "the body names no destination");
  if (destination.url !== options.url) {
    throw new WebhookVerificationError("destination", "destination.url is not this endpoint");
  }
  if (destination.agent_id !== options.agentId) {
    throw new WebhookVerificationError("destination", "destination.agent_id is not this agent");
  }
  notReplayed(options.replayCache, webhookId, timestamp, now);
  return delivery as Delivery;
}

/**
 * The notification (the parsed A2A `StreamResponse`) when the gateway signed it for this
 * receiver; throws a `WebhookVerificationError` whose `reason` is the first check that failed:
 * `timestamp`, `signature`, `destination` (or `replay`). The destination is the update's
 * `metadata.forgebench.destination` (`notificationDestination`): its `url` must be `url`, and its
 * `config_id` and `task_id` the ones given.
 */
export function verifyNotification(options: VerifyNotificationOptions): Notification {
  const { raw, webhookId, timestamp, now } = signedByTheGateway(options);
  const notification = jsonOf(raw);
  const destination = notificationDestination(notification);
  if (destination === undefined) throw new WebhookVerificationError("destination", "the body names no destination");
  if (destination.url !== options.url) {
    throw new WebhookVerificationError("destination", "destination.url is not this receiver");
  }
  if (options.configId !== undefined && destination.config_id !== options.configId) {
    throw new WebhookVerificationError("destination", "destination.config_id is not this config");
  }
  if (options.taskId !== undefined && destination.task_id !== options.taskId) {
    throw new WebhookVerificationError("destination", "destination.task_id is not this task");
  }
  notReplayed(options.replayCache, webhookId, timestamp, now);
  return notification as Notification;
}

/**
 * Where a notification (a parsed `StreamResponse`) says it was sent: its update's
 * `metadata.forgebench.destination`, or `undefined` when it names none. Trust it only once
 * `verifyNotification` has accepted the notification.
 */
export function notificationDestination(notification: unknown): Partial<NotificationDestination> | undefined {
  if (!isObject(notification)) return undefined;
  const update = [notification.statusUpdate, notification.artifactUpdate].find(isObject);
  const metadata = update?.metadata;
  const ours = isObject(metadata) ? metadata[NOTIFICATION_METADATA_KEY] : undefined;
  const destination = isObject(ours) ? ours.destination : undefined;
  return isObject(destination) ? (destination as Partial<NotificationDestination>) : undefined;
}

/**
 * What passed the timestamp and signature checks: the raw body, its id and timestamp, and the
 * time checked against.
 */
interface Signed {
  raw: Buffer;
  webhookId: string;
  timestamp: number;
  now: Date;
}

/**
 * The timestamp and signature checks, in that order: `webhook-timestamp` within the tolerance of
 * `now`, and a signature over `{id}.{timestamp}.{body}` by a `webhook-signing` key of the JWKS.
 */
function signedByTheGateway(options: VerifyDeliveryOptions | VerifyNotificationOptions): Signed {
  const headers = lowercase(options.headers);
  const raw = typeof options.body === "string" ? Buffer.from(options.body, "utf8") : Buffer.from(options.body);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.now ?? new Date();

  const stamp = (headers.get("webhook-timestamp") ?? "").trim();
  if (stamp === "") throw new WebhookVerificationError("timestamp", "the webhook-timestamp header is missing");
  if (!/^[0-9]+$/.test(stamp)) throw new WebhookVerificationError("timestamp", "webhook-timestamp is not Unix seconds");
  const timestamp = Number(stamp);
  if (!Number.isSafeInteger(timestamp) || Math.abs(now.getTime() / 1000 - timestamp) > tolerance) {
    throw new WebhookVerificationError("timestamp", `webhook-timestamp is outside the tolerance of ${tolerance} s`);
  }

  const webhookId = (headers.get("webhook-id") ?? "").trim();
  if (webhookId === "") throw new WebhookVerificationError("signature", "the webhook-id header is missing");
  const signatureHeader = headers.get("webhook-signature") ?? "";
  if (signatureHeader.trim() === "") {
    throw new WebhookVerificationError("signature", "the webhook-signature header is missing");
  }
  const signatures = decodeSignatures(signatureHeader);
  if (signatures.length === 0) throw new WebhookVerificationError("signature", "webhook-signature holds no v1a signature");
  const keys = signingKeys(options.jwks);
  if (keys.length === 0) throw new WebhookVerificationError("signature", "the JWKS holds no webhook-signing key");
  const signed = Buffer.concat([Buffer.from(`${webhookId}.${stamp}.`, "utf8"), raw]);
  if (!keys.some((key) => signatures.some((signature) => verifies(key, signature, signed)))) {
    throw new WebhookVerificationError("signature", "no published webhook-signing key signed it");
  }
  return { raw, webhookId, timestamp, now };
}

/** The signed body, parsed; a body that is not JSON names no destination. */
function jsonOf(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8")) as unknown;
  } catch {
    throw new WebhookVerificationError("destination", "the body is not JSON");
  }
}

/** The replay check, last: with a cache, a `webhook-id` it already accepted is refused. */
function notReplayed(cache: ReplayCache | undefined, webhookId: string, timestamp: number, now: Date): void {
  if (cache !== undefined && !cache.remember(webhookId, timestamp, now)) {
    throw new WebhookVerificationError("replay", "this webhook-id was already handled");
  }
}

export interface FetchJwksOptions {
  /** The gateway's base URL. */
  baseUrl: string;
  /** Any key of the tenant. */
  apiKey: string;
  /** The client's default (`DEFAULT_TIMEOUT_MS`). */
  timeoutMs?: number;
  /** The client's default (`DEFAULT_MAX_RETRIES`). */
  maxRetries?: number;
  signal?: AbortSignal;
}

/**
 * The gateway's JWKS (`GET /v1/billing/export/pubkey`), sent like every SDK request (retries,
 * typed `ForgebenchError`s). Keep the set and fetch it again when a delivery's signature fails,
 * since a rotation adds a key.
 */
export async function fetchJwks(options: FetchJwksOptions): Promise<Jwks> {
  const transport = new Transport({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  });
  const response = await transport.request({
    method: "GET",
    path: JWKS_PATH,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const body = response.body;
  if (!isObject(body) || !Array.isArray(body.keys)) {
    throw new ForgebenchError("the gateway's JWKS has no `keys` list", response.status, body);
  }
  return body as unknown as Jwks;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** One header's value (its name matched case-insensitively), or `undefined`. */
export function headerValue(headers: DeliveryHeaders, name: string): string | undefined {
  return lowercase(headers).get(name.toLowerCase());
}

/** The headers under lower-case names (the first value of a name that comes more than once). */
function lowercase(headers: DeliveryHeaders): Map<string, string> {
  const lowered = new Map<string, string>();
  const add = (name: string, value: string | readonly string[] | undefined): void => {
    const first = typeof value === "string" ? value : value?.[0];
    const key = name.toLowerCase();
    if (first !== undefined && !lowered.has(key)) lowered.set(key, first);
  };
  if (typeof Headers !== "undefined" && headers instanceof Headers) {
    headers.forEach((value, name) => add(name, value));
  } else if (Symbol.iterator in headers) {
    for (const [name, value] of headers as Iterable<readonly [string, string]>) add(name, value);
  } else {
    for (const [name, value] of Object.entries(headers)) add(name, value);
  }
  return lowered;
}

/** The decoded `v1a,` entries of a `webhook-signature` header; others are ignored. */
function decodeSignatures(header: string): Buffer[] {
  const decoded: Buffer[] = [];
  for (const entry of header.split(/\s+/)) {
    if (!entry.startsWith(SIGNATURE_PREFIX)) continue;
    const encoded = entry.slice(SIGNATURE_PREFIX.length);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 !== 0) continue;
    decoded.push(Buffer.from(encoded, "base64"));
  }
  return decoded;
}

/** The Ed25519 keys of the set whose `purpose` is `webhook-signing`. */
function signingKeys(jwks: Jwks): KeyObject[] {
  const keys: KeyObject[] = [];
  const listed: unknown = isObject(jwks) ? jwks.keys : undefined;
  for (const jwk of Array.isArray(listed) ? (listed as unknown[]) : []) {
    if (!isObject(jwk) || jwk.purpose !== WEBHOOK_SIGNING_PURPOSE) continue;
    if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") continue;
    try {
      keys.push(createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" }));
    } catch {
      continue;
    }
  }
  return keys;
}

function verifies(key: KeyObject, signature: Buffer, signed: Buffer): boolean {
  try {
    return verify(null, signed, key, signature);
  } catch {
    return false;
  }
}
