/**
 * Where a client sends its key: `baseUrl`/`apiKey`, else `FORGEBENCH_URL`/`FORGEBENCH_API_KEY`,
 * and no default gateway at all. Each test sets the variables itself (the runner exports
 * FORGEBENCH_URL for the other tests) and restores them after; every `fetch` the SDK makes is
 * recorded, so a request to any other host would show.
 */

import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";

import { Forgebench } from "@seedlinglabs/forgebench-sdk";

import { startScriptedServer, type ScriptedServer } from "./support/proxies.js";

const KEY = "fb_agt_" + "3".repeat(64);
const OTHER_KEY = "fb_agt_" + "4".repeat(64);
const VARIABLES = ["FORGEBENCH_URL", "FORGEBENCH_API_KEY"] as const;
const A_TASK = {
  id: "7d4c5a8e-0000-4000-8000-00000000c0f1",
  context_id: "c",
  status: { state: "submitted", message: null, timestamp: "t" },
  artifacts: [],
  error: null,
};

describe("configuration", () => {
  const saved = new Map<string, string | undefined>();
  const servers: ScriptedServer[] = [];
  const realFetch = globalThis.fetch;
  let fetched: string[] = [];

  async function server(): Promise<ScriptedServer> {
    const started = await startScriptedServer([{ status: 200, body: A_TASK }]);
    servers.push(started);
    return started;
  }

  beforeEach(() => {
    for (const name of VARIABLES) {
      saved.set(name, process.env[name]);
      delete process.env[name];
    }
    fetched = [];
    globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
      fetched.push(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
      return realFetch(input, init);
    }) as typeof fetch;
  });

  afterEach(async () => {
    globalThis.fetch = realFetch;
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await Promise.all(servers.splice(0).map((started) => started.close()));
  });

  test("with no options, the client sends FORGEBENCH_API_KEY to FORGEBENCH_URL and nowhere else", async () => {
    const gateway = await server();
    process.env.FORGEBENCH_URL = gateway.url + "/";
    process.env.FORGEBENCH_API_KEY = KEY;

    const task = await new Forgebench().agents.getTask("callee", A_TASK.id);

    assert.equal(task.id, A_TASK.id, "the answer came from that server");
    const [request, ...more] = gateway.received();
    assert.equal(more.length, 0);
    assert.ok(request?.url.startsWith(`/v1/agents/callee/tasks/${A_TASK.id}`), request?.url);
    assert.equal(request?.headers.authorization, `Bearer ${KEY}`);
    assert.ok(fetched.length > 0);
    for (const url of fetched) assert.ok(url.startsWith(gateway.url + "/"), `${url} is on ${gateway.url}`);
  });

  test("with no URL anywhere, making a client throws before any request", () => {
    process.env.FORGEBENCH_API_KEY = KEY;
    for (const make of [() => new Forgebench(), () => new Forgebench({ apiKey: KEY })]) {
      assert.throws(make, (error: unknown) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, /baseUrl/);
        assert.match(error.message, /FORGEBENCH_URL/);
        assert.ok(!error.message.includes(KEY), "the message never shows the key");
        return true;
      });
    }
    process.env.FORGEBENCH_URL = "";
    assert.throws(() => new Forgebench(), TypeError, "an empty FORGEBENCH_URL is no URL");
    assert.deepEqual(fetched, []);
  });

  test("a client with a URL but no key anywhere throws too", () => {
    process.env.FORGEBENCH_URL = "http://127.0.0.1:1";
    assert.throws(() => new Forgebench(), /FORGEBENCH_API_KEY/);
    assert.deepEqual(fetched, []);
  });

  test("the options win over the environment", async () => {
    const named = await server();
    const fromEnvironment = await server();
    process.env.FORGEBENCH_URL = fromEnvironment.url;
    process.env.FORGEBENCH_API_KEY = OTHER_KEY;

    await new Forgebench({ baseUrl: named.url, apiKey: KEY }).agents.getTask("callee", A_TASK.id);

    assert.equal(fromEnvironment.received().length, 0);
    assert.equal(named.received()[0]?.headers.authorization, `Bearer ${KEY}`);
    for (const url of fetched) assert.ok(url.startsWith(named.url + "/"), url);
  });
});
