// Drives a governed agent through the gate with the official A2A JavaScript SDK (@a2a-js/sdk),
// as any third-party A2A 1.0 client would: resolve the agent's card from the gate, then over
// each binding (JSON-RPC, HTTP+JSON) send a message without waiting, read the task back once
// the callee answered it, list the caller's tasks, and be refused without a binding.
//
// The callee is served by pull through the gateway's REST API (plain fetch, not the SDK): that
// side is the gateway's own protocol, not A2A.
//
// usage: node client.mjs BASE_URL CALLEE_ID CALLER_KEY CALLEE_KEY STRANGER_KEY
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";

const [BASE, CALLEE_ID, CALLER_KEY, CALLEE_KEY, STRANGER_KEY] = process.argv.slice(2);

/** `fetch` that presents an agent's key, as the card's bearer security scheme asks. */
function withKey(key) {
  return (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("Authorization", `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
}

/** An A2A client of the callee, over `binding` (`JSONRPC` or `HTTP+JSON`), acting with `key`. */
async function clientOf(key, binding) {
  const fetchImpl = withKey(key);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      preferredTransports: [binding],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  // The card's full URL, with an empty path: the resolver would put a path beginning with `/`
  // at the host's root.
  return factory.createFromUrl(`${BASE}/v1/agents/${CALLEE_ID}/.well-known/agent-card.json`, "");
}

function message(text) {
  return { messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: text } }] };
}

/** The callee claims its next task over REST and completes it with `answer`. */
async function answerNext(answer) {
  const auth = { Authorization: `Bearer ${CALLEE_KEY}` };
  const claimed = await fetch(`${BASE}/v1/agents/me/tasks/next?wait=10`, { headers: auth });
  assert.equal(claimed.status, 200, "the callee claims the task");
  const task = await claimed.json();
  const posted = await fetch(`${BASE}/v1/agents/me/tasks/${task.id}/result`, {
    method: "POST",
    headers: { ...auth, "Content-Type": "application/json" },
    body: JSON.stringify({ state: "completed", artifacts: [{ parts: [{ text: answer }] }] }),
  });
  assert.equal(posted.status, 200, "the callee's answer is taken");
  return task;
}

for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  const client = await clientOf(CALLER_KEY, binding);
  const sent = await client.sendMessage({
    message: message(`classify over ${binding}`),
    configuration: { returnImmediately: true },
  });
  assert.equal(sent.status?.state, TaskState.TASK_STATE_SUBMITTED, `${binding}: a task, submitted`);
  const claimed = await answerNext(`answered over ${binding}`);
  assert.equal(claimed.id, sent.id, `${binding}: the callee claimed the task the client opened`);
  const read = await client.getTask({ id: sent.id });
  assert.equal(read.status?.state, TaskState.TASK_STATE_COMPLETED, `${binding}: completed`);
  const text = read.artifacts[0]?.parts[0]?.content;
  assert.deepEqual(text, { $case: "text", value: `answered over ${binding}` });
  // The SDK's request types are complete proto messages: every field is given, its default
  // where no filter is meant.
  const listed = await client.listTasks({
    tenant: "",
    contextId: "",
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageToken: "",
    statusTimestampAfter: undefined,
  });
  assert.ok(listed.tasks.some((task) => task.id === sent.id), `${binding}: the caller's tasks list it`);

  const stranger = await clientOf(STRANGER_KEY, binding);
  // The gate's one refusal, whatever the reason: the transport's 403.
  await assert.rejects(
    stranger.sendMessage({ message: message("not bound"), configuration: { returnImmediately: true } }),
    (error) => /\b403\b/.test(error.message),
    `${binding}: a caller without a binding is refused with a 403`,
  );
  console.log(`${binding}: passed`);
}
console.log("all passed");
