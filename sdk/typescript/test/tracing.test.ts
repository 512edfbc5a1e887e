/**
 * OpenTelemetry in an instrumented application (the OpenTelemetry Node SDK, registered with its
 * W3C propagator and async context): the tasks it opens inside a span join that span's trace,
 * and its handlers, under serve and under the push adapter, run in the trace their task brought.
 */

import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";

import { trace } from "@opentelemetry/api";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { Forgebench, nodePushHandler, type Task } from "@seedlinglabs/forgebench-sdk";

import { CALLEE_NAME, baseUrl, newWorld, noGateway, ok, type World } from "./support/gateway.js";

new NodeTracerProvider().register();
const tracer = trace.getTracer("an instrumented application");

/** A `traceparent`'s trace id and span id. */
function ids(traceparent: string | null | undefined): [string, string] {
  assert.ok(traceparent, "a traceparent");
  const [version, traceId, spanId] = traceparent.split("-");
  assert.equal(version, "00", traceparent);
  return [traceId ?? "", spanId ?? ""];
}

/** The active span's trace id and span id. */
function currentIds(): [string, string] {
  const context = trace.getActiveSpan()?.spanContext();
  return [context?.traceId ?? "", context?.spanId ?? ""];
}

/** A task the caller opens inside a span of its own: the task, and the span's ids. */
async function openedInSpan(world: World, text: string): Promise<[Task, [string, string]]> {
  const caller = new Forgebench({ baseUrl: baseUrl(), apiKey: world.callerKey });
  return tracer.startActiveSpan("plan", async (span): Promise<[Task, [string, string]]> => {
    try {
      return [await caller.agents.call(CALLEE_NAME, { text }), currentIds()];
    } finally {
      span.end();
    }
  });
}

describe("OpenTelemetry context", { skip: noGateway }, () => {
  test("a task opened inside a span joins its trace; one outside is in its root call's", async () => {
    const world = await newWorld();
    const [inside, planned] = await openedInSpan(world, "inside");
    const [traceId, spanId] = ids(inside.traceparent);
    assert.equal(traceId, planned[0]);
    assert.notEqual(spanId, planned[1], "the gateway's span, under the application's");
    const caller = new Forgebench({ baseUrl: baseUrl(), apiKey: world.callerKey });
    const outside = await caller.agents.call(CALLEE_NAME, { text: "outside" });
    assert.equal(ids(outside.traceparent)[0], outside.call_id?.replaceAll("-", ""));
  });

  test("serve runs the handler in the claimed task's trace", async () => {
    const world = await newWorld();
    const [opened, planned] = await openedInSpan(world, "traced");
    const seen: [string, string][] = [];
    const callee = new Forgebench({ baseUrl: baseUrl(), apiKey: world.calleeKey });
    const handled = await callee.agents.serve(
      async () => {
        seen.push(currentIds());
        return "done";
      },
      { maxTasks: 1, wait: 5 },
    );
    assert.equal(handled, 1);
    assert.deepEqual(seen, [ids(opened.traceparent)], "under the span the claimed task names");
    assert.equal(seen[0]?.[0], planned[0]);
  });

  test("the push adapter runs the handler in the trace of the delivery", async () => {
    const world = await newWorld();
    const seen: [string, string][] = [];
    const posts: IncomingMessage["headers"][] = [];
    let adapter: ReturnType<typeof nodePushHandler> | undefined;
    const server = createServer((request, response) => {
      posts.push(request.headers);
      adapter?.(request, response);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/push`;
    adapter = nodePushHandler(
      async () => {
        seen.push(currentIds());
        return "done";
      },
      { endpointUrl: url, baseUrl: baseUrl(), apiKey: world.calleeKey, onError: () => undefined },
    );
    try {
      await ok(world.adminKey, "PUT", `/v1/agents/${CALLEE_NAME}/endpoint`, { url });
      const [opened, planned] = await openedInSpan(world, "pushed");
      const settled = (await ok(world.callerKey, "GET", `/v1/agents/${CALLEE_NAME}/tasks/${opened.id}?wait=20`)) as Task;
      assert.equal(settled.status.state, "completed", JSON.stringify(settled.status));
      const delivered = posts[0]?.traceparent;
      assert.ok(typeof delivered === "string");
      assert.deepEqual(seen, [ids(delivered)], "under the span the delivery's POST names");
      assert.equal(seen[0]?.[0], planned[0]);
      assert.notEqual(seen[0]?.[1], ids(opened.traceparent)[1], "the POST's own span, under the task's");
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
