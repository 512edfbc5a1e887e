/**
 * Signing in with OpenID Connect tokens, against the real gateway and a real provider
 * (tests/oidc-provider, oauth2-mock-server): the tenant trusts the provider through
 * `issuers.*`, and clients whose `tokenProvider` fetches the provider's client-credentials
 * tokens act as the agent (or member) each subject names. The provider is the application's
 * side, reached with plain fetch; every gateway call under test goes through `Forgebench`.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { inspect } from "node:util";
import { after, before, describe, test } from "node:test";

import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  Forgebench,
  NotFoundError,
  PermissionDeniedError,
  type TokenProvider,
} from "@seedlinglabs/forgebench-sdk";

import { CALLEE_NAME, CALLER_NAME, baseUrl, newWorld, noGateway, type World } from "./support/gateway.js";
import { startProvider, type OidcProvider } from "./support/provider.js";
import { delay, rejection } from "./support/util.js";

function client(apiKey: string): Forgebench {
  return new Forgebench({ baseUrl: baseUrl(), apiKey });
}

/** A client signing in with `provider`'s tokens, and how many times it asked for one. */
function tokenClient(provider: TokenProvider): { forgebench: Forgebench; calls: () => number } {
  let calls = 0;
  const counted: TokenProvider = async () => {
    calls += 1;
    return provider();
  };
  return { forgebench: new Forgebench({ baseUrl: baseUrl(), tokenProvider: counted, maxRetries: 0 }), calls: () => calls };
}

describe("OpenID Connect sign-in through the SDK", { skip: noGateway }, () => {
  let provider: OidcProvider;
  before(async () => {
    provider = await startProvider();
  });
  after(() => provider?.stop());

  /** A tenant (caller and callee agents) that trusts the provider for an audience of its own. */
  async function trustingWorld(): Promise<{ world: World; admin: Forgebench; audience: string; issuerId: string }> {
    const world = await newWorld();
    const admin = client(world.adminKey);
    const audience = `api://forgebench-ts-${randomUUID()}`;
    const trusted = await admin.issuers.trust(provider.issuer, audience, [
      { subject: "workload-caller", agent: CALLER_NAME },
      { subject: "workload-callee", agent: CALLEE_NAME },
    ]);
    return { world, admin, audience, issuerId: trusted.id };
  }

  test("an admin trusts, lists, updates and distrusts an issuer; tokens sign in as the subjects it lists", async () => {
    const world = await newWorld();
    const admin = client(world.adminKey);
    const audience = `api://forgebench-ts-${randomUUID()}`;

    const trusted = await admin.issuers.trust(provider.issuer, audience, [{ subject: "workload-callee", agent: CALLEE_NAME }]);
    assert.equal(trusted.issuer, provider.issuer);
    assert.equal(trusted.audience, audience);
    assert.equal(trusted.discovery_url, `${provider.issuer}/.well-known/openid-configuration`);
    assert.deepEqual(trusted.subjects, [{ subject: "workload-callee", agent_id: world.calleeId }]);
    assert.equal(typeof trusted.created_at, "string");
    assert.deepEqual(trusted.discovery, { read: true }, "the provider's discovery document was read");
    // the list shows the issuer as trusted, without what reading its document found then
    const { discovery: _found, ...asListed } = trusted;
    assert.deepEqual(await admin.issuers.list(), [asListed]);

    // a client-credentials token of the listed subject acts as the callee agent
    const callee = tokenClient(() => provider.clientCredentials("workload-callee", audience));
    const me = await callee.forgebench.agents.me();
    assert.equal(me.id, world.calleeId);
    assert.equal(me.name, CALLEE_NAME);
    assert.equal((await callee.forgebench.agents.me()).id, world.calleeId);
    assert.equal(callee.calls(), 1, "the token is kept while it is fresh");
    assert.ok((await rejection(callee.forgebench.issuers.list())) instanceof PermissionDeniedError, "an agent may not read issuers");

    // the list is replaced: a member's subject in, the agent's out
    const adminMember = (await admin.members.list()).find((member) => member.role === "admin");
    assert.ok(adminMember !== undefined);
    const updated = await admin.issuers.update(trusted.id, [{ subject: "ops-runner", member_id: adminMember.member_id }]);
    assert.equal(updated.id, trusted.id);
    assert.deepEqual(updated.subjects, [{ subject: "ops-runner", member_id: adminMember.member_id }]);
    assert.deepEqual((await admin.issuers.list())[0]?.subjects, updated.subjects);

    const person = tokenClient(() => provider.clientCredentials("ops-runner", audience));
    assert.ok((await person.forgebench.members.list()).some((member) => member.member_id === adminMember.member_id));
    const unlisted = tokenClient(() => provider.clientCredentials("workload-callee", audience));
    const refused = await rejection(unlisted.forgebench.agents.me());
    assert.ok(refused instanceof AuthenticationError, String(refused));
    assert.equal(unlisted.calls(), 2, "a refused token is replaced once, and no more");

    // a member (not an admin) reads the issuers but may not change them
    const dana = await admin.members.create("Dana Whitfield", "member");
    assert.equal((await client(dana.key).issuers.list()).length, 1);
    assert.ok((await rejection(client(dana.key).issuers.distrust(trusted.id))) instanceof PermissionDeniedError);

    // the pair is trusted already; an unknown agent
    assert.ok((await rejection(admin.issuers.trust(provider.issuer, audience))) instanceof ConflictError);
    const unknown = await rejection(admin.issuers.trust(provider.issuer, `${audience}-2`, [{ subject: "x", agent: "no-such-agent" }]));
    assert.ok(unknown instanceof NotFoundError, String(unknown));
    // a provider that does not answer (yet) is trusted all the same, and the answer says why its
    // document could not be read
    const unreadable = await admin.issuers.trust("http://127.0.0.1:1", audience);
    assert.equal(unreadable.issuer, "http://127.0.0.1:1");
    assert.equal(unreadable.discovery?.read, false, inspect(unreadable.discovery));
    assert.ok((unreadable.discovery?.problem ?? "").length > 0, "a problem is named");
    assert.ok((await admin.issuers.list()).some((issuer) => issuer.id === unreadable.id), "it is trusted");
    assert.deepEqual(await admin.issuers.distrust(unreadable.id), { id: unreadable.id, removed: true });
    // an address the outbound guard never reads (the cloud metadata address) is refused
    const guarded = await rejection(admin.issuers.trust("https://169.254.169.254", `${audience}-3`));
    assert.ok(guarded instanceof PermissionDeniedError, String(guarded));
    // an issuer that is not printable ASCII is no issuer at all
    const unprintable = await rejection(admin.issuers.trust("https://login.ex\u00e4mple.com", `${audience}-4`));
    assert.ok(unprintable instanceof BadRequestError, String(unprintable));

    const removed = await admin.issuers.distrust(trusted.id);
    assert.deepEqual(removed, { id: trusted.id, removed: true });
    assert.deepEqual(await admin.issuers.list(), []);
    const distrusted = tokenClient(() => provider.clientCredentials("ops-runner", audience));
    assert.ok((await rejection(distrusted.forgebench.members.list())) instanceof AuthenticationError, "a distrusted issuer's tokens sign in no more");
    assert.ok((await rejection(admin.issuers.distrust(trusted.id))) instanceof NotFoundError);
  });

  test("agents signed in with tokens open and serve a task, as their keys would", async () => {
    const { world, audience } = await trustingWorld();
    const caller = tokenClient(() => provider.clientCredentials("workload-caller", audience));
    const callee = tokenClient(() => provider.clientCredentials("workload-callee", audience));

    const opened = await caller.forgebench.agents.call(CALLEE_NAME, { text: "classify invoice 1234", wait: 0 });
    assert.equal(opened.caller_agent_id, world.callerId);
    const claimed = await callee.forgebench.agents.nextTask({ wait: 10 });
    assert.equal(claimed?.id, opened.id);
    await callee.forgebench.agents.reply(opened.id, { state: "completed", artifacts: [{ name: "response", parts: [{ text: "utilities" }] }] });
    assert.equal((await caller.forgebench.agents.getTask(CALLEE_NAME, opened.id)).status.state, "completed");
    assert.equal(caller.calls(), 1);
    assert.equal(callee.calls(), 1);
  });

  test("a token the gateway refuses as invalid_token is replaced once and the request sent again", async () => {
    const { world, audience } = await trustingWorld();
    // the first token's subject is not listed, though it says it is fresh for an hour
    const answers = [provider.signed({ sub: "nobody-listed", aud: audience }, 3600)];
    const tokens = tokenClient(async () => {
      const next = answers.shift();
      if (next !== undefined) return { token: await next, expiresIn: 3600 };
      return provider.clientCredentials("workload-callee", audience);
    });
    assert.equal((await tokens.forgebench.agents.me()).id, world.calleeId);
    assert.equal(tokens.calls(), 2, "one refused token, one new one");
    assert.equal((await tokens.forgebench.agents.me()).id, world.calleeId);
    assert.equal(tokens.calls(), 2, "the new token is kept");

    // a provider whose every token is refused: one new token, one more attempt, then the error
    const refusedTokens: string[] = [];
    const refused = tokenClient(async () => {
      const token = await provider.signed({ sub: "nobody-listed", aud: audience }, 3600);
      refusedTokens.push(token);
      return token;
    });
    const error = await rejection(refused.forgebench.agents.me());
    assert.ok(error instanceof AuthenticationError, String(error));
    assert.equal(error.status, 401);
    assert.equal(refused.calls(), 2);
    for (const token of refusedTokens) {
      assert.ok(!inspect(error, { depth: 10 }).includes(token), "no token in the error");
      assert.ok(!JSON.stringify(error).includes(token));
    }
    // a key is never replaced: one attempt only
    assert.ok((await rejection(client(world.callerKey + "0").agents.me())) instanceof AuthenticationError);
  });

  test("a token about to expire is asked for again first (the JWT's exp, or the provider's expiresIn)", async () => {
    const { world, audience } = await trustingWorld();
    // tokens the gateway still takes, but within the 60 s margin: asked for before every request
    const byExp = tokenClient(() => provider.signed({ sub: "workload-callee", aud: audience }, 59));
    // a client-credentials token (an hour) that its provider says expires in 59 s
    const byExpiresIn = tokenClient(async () => ({ ...(await provider.clientCredentials("workload-caller", audience)), expiresIn: 59 }));
    // the same, fresh: kept
    const freshExp = tokenClient(() => provider.signed({ sub: "workload-callee", aud: audience }, 3600));
    const freshExpiresIn = tokenClient(async () => ({ ...(await provider.clientCredentials("workload-caller", audience)), expiresIn: 3600 }));
    for (let i = 0; i < 3; i++) {
      assert.equal((await byExp.forgebench.agents.me()).id, world.calleeId);
      assert.equal((await byExpiresIn.forgebench.agents.me()).id, world.callerId);
      assert.equal((await freshExp.forgebench.agents.me()).id, world.calleeId);
      assert.equal((await freshExpiresIn.forgebench.agents.me()).id, world.callerId);
    }
    assert.deepEqual([byExp.calls(), byExpiresIn.calls()], [3, 3], "a token within 60 s of its expiry is replaced before it is sent");
    assert.deepEqual([freshExp.calls(), freshExpiresIn.calls()], [1, 1], "fresh tokens are kept");
  });

  test("concurrent requests share one provider call; no token shows in the client", async () => {
    const { world, audience } = await trustingWorld();
    let lastToken = "";
    const tokens = tokenClient(async () => {
      await delay(100);
      const fetched = await provider.clientCredentials("workload-callee", audience);
      lastToken = fetched.token;
      return fetched;
    });
    const answers = await Promise.all(Array.from({ length: 5 }, () => tokens.forgebench.agents.me()));
    assert.deepEqual(answers.map((agent) => agent.id), Array(5).fill(world.calleeId));
    assert.equal(tokens.calls(), 1);
    assert.ok(lastToken.length > 0);
    assert.ok(!inspect(tokens.forgebench, { depth: 10, showHidden: true }).includes(lastToken));
    assert.ok(!JSON.stringify(tokens.forgebench).includes(lastToken));
  });
});
