/**
 * verifyDelivery, verifyNotification, fetchJwks and ReplayCache: deliveries and notifications
 * signed with a key made here, the notifications the gateway's own tests wrote
 * (sdk/testdata/notifications.json), then a real delivery and real notifications from the gateway
 * received on a local endpoint and verified with the gateway's JWKS.
 */

import assert from "node:assert/strict";
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import {
  AuthenticationError,
  DEFAULT_TOLERANCE_SECONDS,
  ForgebenchError,
  ReplayCache,
  WebhookVerificationError,
  fetchJwks,
  notificationDestination,
  verifyDelivery,
  verifyNotification,
  type Jwk,
  type Jwks,
  type VerifyDeliveryOptions,
  type VerifyNotificationOptions,
  type WebhookCheck,
} from "@seedlinglabs/forgebench-sdk";

import {
  CALLEE_NAME,
  answerTask,
  baseUrl,
  claimExpected,
  newWorld,
  noGateway,
  ok,
  openTask,
  raw,
  textResult,
} from "./support/gateway.js";

const URL_SAVED = "https://receiver.example/a2a";
const AGENT_ID = "706608c0-4160-452a-86ac-ded1186326ac";
const NOW_SECONDS = 1_760_000_000;
const NOW = new Date(NOW_SECONDS * 1000);

function newKey(): KeyObject {
  return generateKeyPairSync("ed25519").privateKey;
}

function jwkOf(key: KeyObject, purpose = "webhook-signing", kid = "k1"): Jwk {
  const exported = key.export({ format: "jwk" });
  return { kty: "OKP", crv: "Ed25519", x: exported.x, kid, alg: "EdDSA", use: "sig", purpose };
}

function deliveryBody(url = URL_SAVED, agentId = AGENT_ID): Buffer {
  return Buffer.from(
    JSON.stringify({
      task_id: "task-1",
      call_id: "call-1",
      message: { role: "user", parts: [{ text: "Classify" }] },
      destination: { tenant_id: "tenant-1", agent_id: agentId, url },
    }),
  );
}

function signatureOf(key: KeyObject, webhookId: string, timestamp: number, body: Buffer): string {
  const signed = Buffer.concat([Buffer.from(`${webhookId}.${timestamp}.`), body]);
  return `v1a,${sign(null, signed, key).toString("base64")}`;
}

/** A delivery signed by `key`, with a JWKS that publishes `key` (and a card key). */
class Signed {
  constructor(
    readonly key: KeyObject = newKey(),
    readonly timestamp: number = NOW_SECONDS,
    readonly body: Buffer = deliveryBody(),
    readonly webhookId: string = "msg_delivery-1",
  ) {}

  headers(overrides: Record<string, string | undefined> = {}): Record<string, string> {
    const all: Record<string, string | undefined> = {
      "Webhook-Id": this.webhookId,
      "Webhook-Timestamp": String(this.timestamp),
      "Webhook-Signature": signatureOf(this.key, this.webhookId, this.timestamp, this.body),
      "Content-Type": "application/json",
      ...overrides,
    };
    return Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== undefined));
  }

  jwks(): Jwks {
    return { keys: [jwkOf(newKey(), "card-signing", "card"), jwkOf(this.key)] };
  }

  options(changes: Partial<VerifyDeliveryOptions> = {}): VerifyDeliveryOptions {
    return { headers: this.headers(), body: this.body, jwks: this.jwks(), url: URL_SAVED, agentId: AGENT_ID, now: NOW, ...changes };
  }
}

/** The error verifyDelivery throws; fails the test when it returns. */
function rejection(options: VerifyDeliveryOptions): InstanceType<typeof WebhookVerificationError> {
  try {
    verifyDelivery(options);
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, `not a WebhookVerificationError: ${String(error)}`);
    assert.ok(error instanceof ForgebenchError);
    return error;
  }
  assert.fail("the delivery was accepted");
}

function reason(options: VerifyDeliveryOptions): WebhookCheck {
  return rejection(options).reason;
}

describe("verifyDelivery", () => {
  test("accepts a delivery signed for this endpoint and returns it parsed", () => {
    const signed = new Signed();
    const delivery = verifyDelivery(signed.options());
    assert.equal(delivery.task_id, "task-1");
    assert.deepEqual(delivery.destination, { tenant_id: "tenant-1", agent_id: AGENT_ID, url: URL_SAVED });
  });

  test("matches header names whatever their case and container; the body may be a string", () => {
    const signed = new Signed();
    const entries = Object.entries(signed.headers());
    const lower: IncomingHttpHeaders = Object.fromEntries(entries.map(([name, value]) => [name.toLowerCase(), value]));
    const upperPairs = entries.map(([name, value]) => [name.toUpperCase(), value] as const);
    for (const headers of [lower, upperPairs, new Headers(signed.headers()), new Map(entries)]) {
      assert.equal(verifyDelivery(signed.options({ headers, body: signed.body.toString() })).call_id, "call-1");
    }
  });

  test("ignores other signature entries, and any v1a entry may verify", () => {
    const signed = new Signed();
    const other = signatureOf(newKey(), signed.webhookId, NOW_SECONDS, signed.body);
    const value = `v1,c2VjcmV0 ${other} v1a,not*base64 ${signed.headers()["Webhook-Signature"]}`;
    assert.ok(verifyDelivery(signed.options({ headers: signed.headers({ "Webhook-Signature": value }) })));
  });

  test("a tampered body, id or timestamp fails the signature check", () => {
    const signed = new Signed();
    const tampered = Buffer.from(signed.body.toString().replace("Classify", "Delete everything"));
    assert.equal(reason(signed.options({ body: tampered })), "signature");
    assert.equal(reason(signed.options({ headers: signed.headers({ "Webhook-Id": "msg_other" }) })), "signature");
    const moved = signed.headers({ "Webhook-Timestamp": String(NOW_SECONDS + 1) });
    assert.equal(reason(signed.options({ headers: moved })), "signature");
  });

  test("an old or future timestamp fails the timestamp check, before the signature", () => {
    const old = new Signed(newKey(), NOW_SECONDS - DEFAULT_TOLERANCE_SECONDS - 1);
    const error = rejection(old.options());
    assert.equal(error.reason, "timestamp");
    assert.match(error.message, /tolerance/);
    assert.equal(reason(new Signed(newKey(), NOW_SECONDS + DEFAULT_TOLERANCE_SECONDS + 1).options()), "timestamp");
    const edge = new Signed(newKey(), NOW_SECONDS - DEFAULT_TOLERANCE_SECONDS);
    assert.ok(verifyDelivery(edge.options()));
    assert.equal(reason(edge.options({ toleranceSeconds: 60 })), "timestamp");
    assert.equal(reason(old.options({ body: Buffer.from("{}") })), "timestamp");
  });

  test("the clock is the default now", () => {
    const key = newKey();
    const fresh = new Signed(key, Math.floor(Date.now() / 1000));
    const { now: _now, ...withoutNow } = fresh.options();
    assert.ok(verifyDelivery(withoutNow));
    const stale = new Signed(key, Math.floor(Date.now() / 1000) - DEFAULT_TOLERANCE_SECONDS - 60);
    const { now: _stale, ...staleWithoutNow } = stale.options();
    assert.equal(reason(staleWithoutNow), "timestamp");
  });

  test("a timestamp that is not Unix seconds fails the timestamp check", () => {
    const signed = new Signed();
    for (const value of ["", "17e8", "-1760000000", "1760000000.5", "soon", "0x68e6"]) {
      assert.equal(reason(signed.options({ headers: signed.headers({ "Webhook-Timestamp": value }) })), "timestamp", value);
    }
  });

  test("a key of another purpose does not verify", () => {
    const signed = new Signed();
    assert.equal(reason(signed.options({ jwks: { keys: [jwkOf(signed.key, "card-signing")] } })), "signature");
    const { purpose: _purpose, ...noPurpose } = jwkOf(signed.key);
    assert.equal(reason(signed.options({ jwks: { keys: [noPurpose] } })), "signature");
  });

  test("a signature of another key does not verify", () => {
    const signed = new Signed();
    const impostor = new Signed(newKey());
    assert.equal(reason(signed.options({ headers: impostor.headers() })), "signature");
  });

  test("another destination url or agent id fails the destination check", () => {
    const signed = new Signed();
    const otherUrl = rejection(signed.options({ url: "https://receiver.example/other" }));
    assert.equal(otherUrl.reason, "destination");
    assert.match(otherUrl.message, /url/);
    const otherAgent = rejection(signed.options({ agentId: randomUUID() }));
    assert.equal(otherAgent.reason, "destination");
    assert.match(otherAgent.message, /agent_id/);
    const elsewhere = new Signed(newKey(), NOW_SECONDS, deliveryBody("https://elsewhere.example/a2a"));
    assert.equal(reason(elsewhere.options()), "destination");
    const nowhere = new Signed(newKey(), NOW_SECONDS, Buffer.from('{"task_id":"t"}'));
    assert.equal(reason(nowhere.options()), "destination");
  });

  test("missing headers fail the check they belong to", () => {
    const signed = new Signed();
    assert.equal(reason(signed.options({ headers: signed.headers({ "Webhook-Timestamp": undefined }) })), "timestamp");
    assert.equal(reason(signed.options({ headers: signed.headers({ "Webhook-Id": undefined }) })), "signature");
    assert.equal(reason(signed.options({ headers: signed.headers({ "Webhook-Signature": undefined }) })), "signature");
    assert.equal(reason(signed.options({ headers: {} })), "timestamp");
    assert.equal(reason(signed.options({ headers: signed.headers({ "Webhook-Signature": "v1,c2VjcmV0" }) })), "signature");
    assert.equal(reason(signed.options({ jwks: { keys: [] } })), "signature");
  });

  test("errors never echo the signature, the body or the URLs", () => {
    const signed = new Signed();
    const signature = signed.headers()["Webhook-Signature"] ?? "";
    const failures = [
      rejection(signed.options({ body: Buffer.concat([signed.body, Buffer.from(" ")]) })),
      rejection(signed.options({ url: "https://other.example/a2a?token=hunter2" })),
      rejection(signed.options({ agentId: "someone-else" })),
    ];
    for (const error of failures) {
      for (const secret of [signature.slice(4), "Classify", URL_SAVED, "hunter2", "someone-else"]) {
        assert.ok(!error.message.includes(secret), `${error.message} includes ${secret}`);
      }
    }
  });

  test("a ReplayCache drops an id already accepted, remembering it only after every check", () => {
    const signed = new Signed();
    const replayCache = new ReplayCache();
    assert.equal(reason(signed.options({ body: Buffer.from("{}"), replayCache })), "signature");
    assert.equal(replayCache.size, 0);
    assert.ok(verifyDelivery(signed.options({ replayCache })));
    assert.equal(reason(signed.options({ replayCache })), "replay");
    const next = new Signed(signed.key, NOW_SECONDS, deliveryBody(), "msg_delivery-2");
    assert.ok(verifyDelivery(next.options({ replayCache })));
    const later = new Date((NOW_SECONDS + DEFAULT_TOLERANCE_SECONDS + 1) * 1000);
    assert.ok(replayCache.remember("msg_delivery-3", NOW_SECONDS, later));
    assert.equal(replayCache.size, 1);
  });
});

const HOOK_URL = "https://receiver.example/hooks/a2a?team=7";
const CONFIG_ID = "hook-1";
const TASK_ID = "task-1";
/** The notifications the gateway's tests built and signed (shared/src/push/signature.rs). */
const VECTORS = resolve(dirname(fileURLToPath(import.meta.url)), "../../../testdata/notifications.json");

function notificationBody(url = HOOK_URL, configId = CONFIG_ID, taskId = TASK_ID): Buffer {
  const destination = { tenant_id: "tenant-1", task_id: taskId, config_id: configId, url };
  return Buffer.from(
    JSON.stringify({
      statusUpdate: {
        taskId,
        contextId: "context-1",
        status: {
          state: "TASK_STATE_WORKING",
          timestamp: "2026-12-01T10:00:02.000000Z",
          message: { role: "ROLE_AGENT", parts: [{ text: "half way" }] },
        },
        metadata: { forgebench: { destination } },
      },
    }),
  );
}

/** A notification signed by `key` (the same JWKS as `Signed`), verified as the receiver at `HOOK_URL`. */
class SignedNotification extends Signed {
  constructor(key: KeyObject = newKey(), timestamp: number = NOW_SECONDS, body: Buffer = notificationBody()) {
    super(key, timestamp, body, `${TASK_ID}:${CONFIG_ID}:1`);
  }

  notification(changes: Partial<VerifyNotificationOptions> = {}): VerifyNotificationOptions {
    return { headers: this.headers(), body: this.body, jwks: this.jwks(), url: HOOK_URL, now: NOW, ...changes };
  }
}

/** The error verifyNotification throws; fails the test when it returns. */
function notificationRejection(options: VerifyNotificationOptions): InstanceType<typeof WebhookVerificationError> {
  try {
    verifyNotification(options);
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, `not a WebhookVerificationError: ${String(error)}`);
    return error;
  }
  assert.fail("the notification was accepted");
}

function notificationReason(options: VerifyNotificationOptions): WebhookCheck {
  return notificationRejection(options).reason;
}

describe("verifyNotification", () => {
  test("accepts a notification signed for this receiver and returns it parsed", () => {
    const signed = new SignedNotification();
    for (const given of [{}, { configId: CONFIG_ID }, { taskId: TASK_ID }, { configId: CONFIG_ID, taskId: TASK_ID }]) {
      const notification = verifyNotification(signed.notification(given));
      assert.equal(notification.statusUpdate?.taskId, TASK_ID);
      assert.deepEqual(notificationDestination(notification), {
        tenant_id: "tenant-1",
        task_id: TASK_ID,
        config_id: CONFIG_ID,
        url: HOOK_URL,
      });
    }
  });

  test("a notification signed for another receiver fails the destination check", () => {
    const elsewhere = new SignedNotification(newKey(), NOW_SECONDS, notificationBody("https://elsewhere.example/hooks/a2a?team=7"));
    const error = notificationRejection(elsewhere.notification());
    assert.equal(error.reason, "destination");
    assert.match(error.message, /url/);
    // the URL as saved, exactly: no normalization either way
    const signed = new SignedNotification();
    for (const url of ["https://receiver.example/hooks/a2a", "https://RECEIVER.example/hooks/a2a?team=7", `${HOOK_URL}/`]) {
      assert.equal(notificationReason(signed.notification({ url })), "destination", url);
    }
  });

  test("another config or task fails the destination check", () => {
    const signed = new SignedNotification();
    const otherConfig = notificationRejection(signed.notification({ configId: "hook-2" }));
    assert.equal(otherConfig.reason, "destination");
    assert.match(otherConfig.message, /config_id/);
    const otherTask = notificationRejection(signed.notification({ taskId: "task-2" }));
    assert.equal(otherTask.reason, "destination");
    assert.match(otherTask.message, /task_id/);
  });

  test("a tampered notification fails the signature check", () => {
    const signed = new SignedNotification();
    const tampered = Buffer.from(signed.body.toString().replace("half way", "all done"));
    assert.equal(notificationReason(signed.notification({ body: tampered })), "signature");
    const moved = new SignedNotification(signed.key, NOW_SECONDS, notificationBody("https://elsewhere.example/x"));
    assert.equal(notificationReason(signed.notification({ headers: moved.headers() })), "signature");
  });

  test("an old notification fails the timestamp check, before the signature", () => {
    const old = new SignedNotification(newKey(), NOW_SECONDS - DEFAULT_TOLERANCE_SECONDS - 1);
    const error = notificationRejection(old.notification());
    assert.equal(error.reason, "timestamp");
    assert.match(error.message, /tolerance/);
    assert.equal(notificationReason(old.notification({ body: Buffer.from("{}") })), "timestamp");
    assert.ok(verifyNotification(old.notification({ toleranceSeconds: DEFAULT_TOLERANCE_SECONDS + 1 })));
  });

  test("a body naming no notification destination fails the destination check", () => {
    for (const body of [
      deliveryBody(),
      Buffer.from('{"statusUpdate":{"taskId":"t"}}'),
      Buffer.from('{"statusUpdate":{"metadata":{"forgebench":{}}}}'),
      Buffer.from("[]"),
      Buffer.from("not json"),
    ]) {
      const signed = new SignedNotification(newKey(), NOW_SECONDS, body);
      assert.equal(notificationReason(signed.notification()), "destination", body.toString());
    }
    // and a notification is no delivery: it names no delivery destination
    const notification = new SignedNotification();
    assert.equal(reason(notification.options()), "destination");
  });

  test("a ReplayCache drops a notification already accepted", () => {
    const signed = new SignedNotification();
    const replayCache = new ReplayCache();
    assert.ok(verifyNotification(signed.notification({ replayCache })));
    assert.equal(notificationReason(signed.notification({ replayCache })), "replay");
  });

  test("errors never echo the body or the URLs", () => {
    const signed = new SignedNotification();
    const failures = [
      notificationRejection(signed.notification({ url: "https://other.example/?token=hunter2" })),
      notificationRejection(signed.notification({ body: Buffer.concat([signed.body, Buffer.from(" ")]) })),
      notificationRejection(signed.notification({ configId: "secret-config" })),
    ];
    for (const error of failures) {
      for (const secret of ["hunter2", HOOK_URL, "half way", "secret-config"]) {
        assert.ok(!error.message.includes(secret), `${error.message} includes ${secret}`);
      }
    }
  });
});

interface Vectors {
  jwks: Jwks;
  url: string;
  tenant_id: string;
  task_id: string;
  config_id: string;
  notifications: { headers: Record<string, string>; body: string }[];
}

describe("the gateway's own notifications (sdk/testdata/notifications.json)", () => {
  const vectors = JSON.parse(readFileSync(VECTORS, "utf8")) as Vectors;

  test("each verifies for its receiver, and for no other", () => {
    assert.ok(vectors.notifications.length >= 2);
    const kinds = new Set<string>();
    for (const { headers, body } of vectors.notifications) {
      const now = new Date(Number(headers["webhook-timestamp"]) * 1000);
      const options: VerifyNotificationOptions = { headers, body, jwks: vectors.jwks, url: vectors.url, now };
      const notification = verifyNotification({ ...options, configId: vectors.config_id, taskId: vectors.task_id });
      for (const kind of Object.keys(notification)) kinds.add(kind);
      assert.deepEqual(notificationDestination(notification), {
        tenant_id: vectors.tenant_id,
        task_id: vectors.task_id,
        config_id: vectors.config_id,
        url: vectors.url,
      });
      assert.equal(notificationReason({ ...options, url: "https://receiver.example/hooks/a2a" }), "destination");
      assert.equal(notificationReason({ ...options, configId: "another-hook" }), "destination");
      const moved = body.replace(vectors.url, "https://elsewhere.example/");
      assert.equal(notificationReason({ ...options, body: moved }), "signature");
      const late = new Date(now.getTime() + (DEFAULT_TOLERANCE_SECONDS + 1) * 1000);
      assert.equal(notificationReason({ ...options, now: late }), "timestamp");
    }
    assert.deepEqual([...kinds].sort(), ["artifactUpdate", "statusUpdate"]);
  });
});

describe("fetchJwks", () => {
  let server: Server;
  let url = "";
  let status = 200;
  const authorizations: string[] = [];

  before(async () => {
    server = createServer((request, response) => {
      authorizations.push(request.headers.authorization ?? "");
      assert.equal(request.url, "/v1/billing/export/pubkey");
      response.writeHead(status, { "Content-Type": "application/json" });
      response.end(JSON.stringify(status === 200 ? { keys: [] } : { detail: { code: "unauthenticated" } }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });

  after(() => {
    server.close();
  });

  test("reads the route with the key; a refusal is the SDK's typed error", async () => {
    assert.deepEqual(await fetchJwks({ baseUrl: url, apiKey: "fb_test_key" }), { keys: [] });
    assert.deepEqual(authorizations, ["Bearer fb_test_key"]);
    status = 401;
    await assert.rejects(fetchJwks({ baseUrl: url, apiKey: "fb_test_key" }), AuthenticationError);
  });
});

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

describe("a real delivery from the gateway", { skip: noGateway }, () => {
  test("verifies with the JWKS the gateway serves, and only at its own endpoint", async () => {
    const received: Received[] = [];
    const endpointServer = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        received.push({ headers: request.headers, body: Buffer.concat(chunks) });
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ state: "completed", artifacts: [{ name: "response", parts: [{ text: "received" }] }] }));
      });
    });
    await new Promise<void>((resolve) => endpointServer.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(endpointServer.address() as AddressInfo).port}/a2a`;
    try {
      const world = await newWorld();
      const saved = (await ok(world.adminKey, "PUT", `/v1/agents/${CALLEE_NAME}/endpoint`, { url: endpoint })) as {
        endpoint: { url: string };
      };
      assert.equal(saved.endpoint.url, endpoint);
      const task = await openTask(world, [{ text: "Classify" }], 20);
      assert.equal(task.status.state, "completed");
      assert.equal(received.length, 1);
      const delivery = received[0]!;

      const jwks = await fetchJwks({ baseUrl: baseUrl(), apiKey: world.calleeKey });
      assert.ok(jwks.keys.some((key) => key.purpose === "webhook-signing"));
      const replayCache = new ReplayCache();
      const options: VerifyDeliveryOptions = {
        headers: delivery.headers,
        body: delivery.body,
        jwks,
        url: endpoint,
        agentId: world.calleeId,
      };
      const verified = verifyDelivery({ ...options, replayCache });
      assert.equal(verified.task_id, task.id);
      assert.equal(verified.destination.agent_id, world.calleeId);

      assert.equal(reason({ ...options, replayCache }), "replay");
      assert.equal(reason({ ...options, url: endpoint.replace("/a2a", "/other") }), "destination");
      assert.equal(reason({ ...options, agentId: world.callerId }), "destination");
      const tampered = Buffer.from(delivery.body.toString().replace("Classify", "Classifx"));
      assert.equal(reason({ ...options, body: tampered }), "signature");
      const late = new Date(Date.now() + (DEFAULT_TOLERANCE_SECONDS + 5) * 1000);
      assert.equal(reason({ ...options, now: late }), "timestamp");
      const cardKeysOnly = { keys: jwks.keys.filter((key) => key.purpose !== "webhook-signing") };
      assert.equal(reason({ ...options, jwks: cardKeysOnly }), "signature");
    } finally {
      endpointServer.close();
    }
  });
});

describe("real notifications from the gateway", { skip: noGateway }, () => {
  test("verify with the JWKS the gateway serves, and only at their own receiver", async () => {
    const received: Received[] = [];
    let final: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => (final = resolve));
    const receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks);
        received.push({ headers: request.headers, body });
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end("{}");
        if (body.includes("TASK_STATE_COMPLETED")) final();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/a2a?team=7`;
    try {
      const world = await newWorld();
      const sent = await raw(
        world.callerKey,
        "POST",
        `/v1/agents/${world.calleeId}/a2a/jsonrpc`,
        {
          jsonrpc: "2.0",
          id: 1,
          method: "SendMessage",
          params: {
            message: { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text: "Classify" }] },
            configuration: { returnImmediately: true, taskPushNotificationConfig: { id: "hook", url: hook } },
          },
        },
        { "A2A-Version": "1.0" },
      );
      const taskId = (sent.body as { result?: { task?: { id?: string } } }).result?.task?.id;
      assert.ok(taskId !== undefined, JSON.stringify(sent.body));
      assert.equal((await claimExpected(world)).id, taskId);
      await answerTask(world, taskId, textResult("received"));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise((_, fail) => (timer = setTimeout(() => fail(new Error("no final notification")), 15_000)));
      await Promise.race([finished, late]).finally(() => clearTimeout(timer));

      // any key of the tenant reads the JWKS: here the caller's own, who made the config
      const jwks = await fetchJwks({ baseUrl: baseUrl(), apiKey: world.callerKey });
      const replayCache = new ReplayCache();
      const kinds = received.map(({ headers, body }) => {
        const notification = verifyNotification({ headers, body, jwks, url: hook, configId: "hook", taskId, replayCache });
        const destination = notificationDestination(notification);
        assert.deepEqual([destination?.url, destination?.config_id, destination?.task_id], [hook, "hook", taskId]);
        return Object.keys(notification)[0];
      });
      assert.deepEqual(kinds, ["statusUpdate", "artifactUpdate", "statusUpdate"]);

      const first = received[0]!;
      const options: VerifyNotificationOptions = { headers: first.headers, body: first.body, jwks, url: hook };
      assert.equal(notificationReason({ ...options, replayCache }), "replay");
      assert.equal(notificationReason({ ...options, url: hook.replace("?team=7", "") }), "destination");
      assert.equal(notificationReason({ ...options, configId: "another-hook" }), "destination");
      assert.equal(notificationReason({ ...options, taskId: randomUUID() }), "destination");
      const tampered = Buffer.from(first.body.toString().replace("/hooks/a2a", "/elsewhere"));
      assert.equal(notificationReason({ ...options, body: tampered }), "signature");
      const later = new Date(Date.now() + (DEFAULT_TOLERANCE_SECONDS + 5) * 1000);
      assert.equal(notificationReason({ ...options, now: later }), "timestamp");
    } finally {
      receiver.close();
    }
  });
});
