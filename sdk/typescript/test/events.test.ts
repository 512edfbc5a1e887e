/**
 * How `agents.events` reads a stream, against a scripted server that splits the events where
 * a network may (mid-line, between "\r" and "\n"): the gateway's own streams are read in
 * manage.test.ts.
 */

import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";

import { Forgebench, RateLimitError, type TaskEvent } from "@seedlinglabs/forgebench-sdk";

import { delay } from "./support/util.js";

/** A server answering every request with `chunks`, a pause between each; its requests' heads. */
async function scripted(chunks: string[], status = 200): Promise<{ url: string; heads: IncomingHttpHeaders[]; close(): void }> {
  const heads: IncomingHttpHeaders[] = [];
  const server = createServer(async (request, response) => {
    heads.push(request.headers);
    response.writeHead(status, { "Content-Type": status === 200 ? "text/event-stream" : "application/json" });
    for (const chunk of chunks) {
      response.write(chunk);
      await delay(10);
    }
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    heads,
    close: () => server.close(),
  };
}

describe("agents.events reading server-sent events", () => {
  test("joins split lines and data lines, skips comments and unknown kinds, ends with the stream", async () => {
    const server = await scripted([
      'id: 0\r\nevent: task\r\ndata: {"id":"t-1",',
      '"status":{"state":"working"}}\r',
      "\n\r\n: keep-alive\n\n",
      "id: 1\nevent: a-kind-from-later\ndata: {}\n\n",
      'event: status\nid: 2\ndata: {"event":2,\ndata: "state":"working"}\n\n',
      'event: error\ndata: {"detail":{"code":"unavailable"}}\n\n',
      "id: 3\nevent: final\ndata: {}", // never closed by a blank line: dropped
    ]);
    try {
      const forgebench = new Forgebench({ baseUrl: server.url, apiKey: "fb_agt_" + "4".repeat(64), maxRetries: 0 });
      const events: TaskEvent[] = [];
      for await (const event of forgebench.agents.events("invoice-classifier", "t-1", { lastEventId: 7 })) events.push(event);
      assert.deepEqual(events, [
        { event: "task", id: "0", data: { id: "t-1", status: { state: "working" } } },
        { event: "status", id: "2", data: { event: 2, state: "working" } },
        { event: "error", id: null, data: { detail: { code: "unavailable" } } },
      ]);
      const head = server.heads[0];
      assert.equal(head?.accept, "text/event-stream");
      assert.equal(head?.["last-event-id"], "7");
      assert.match(head?.["user-agent"] ?? "", /^forgebench-sdk-typescript\//);
    } finally {
      server.close();
    }
  });

  test("a refusal before the stream opens is the status's error, after the request's retries", async () => {
    const server = await scripted([JSON.stringify({ detail: { code: "too_many_requests", message: "slow down" } })], 429);
    try {
      const forgebench = new Forgebench({ baseUrl: server.url, apiKey: "fb_agt_" + "5".repeat(64), maxRetries: 1 });
      const iterator = forgebench.agents.events("invoice-classifier", "t-1")[Symbol.asyncIterator]();
      await assert.rejects(iterator.next(), RateLimitError);
      assert.equal(server.heads.length, 2, "a 429 is tried again");
    } finally {
      server.close();
    }
  });
});
