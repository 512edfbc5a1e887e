/**
 * verifyDelivery, fetchJwks and ReplayCache: deliveries signed with a key made here, then a real
 * delivery from the gateway received on a local endpoint and verified with the gateway's JWKS.
 */

import assert from "node:assert/strict";
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";

import {
  AuthenticationError,
  DEFAULT_TOLERANCE_SECONDS,
  ForgebenchError,
  ReplayCache,
  WebhookVerificationError,
  fetchJwks,
  verifyDelivery,
  type Jwk,
  type Jwks,
  type VerifyDeliveryOptions,
  type WebhookCheck,
} from "@seedlinglabs/forgebench-sdk";

import { CALLEE_NAME, baseUrl, newWorld, noGateway, ok, openTask } from "./support/gateway.js";

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
