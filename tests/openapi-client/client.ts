// A small client written against the types openapi-typescript generates from the gateway's
// OpenAPI document (generated/api.d.ts). If the document stops being fit for generation, or a
// shape a client relies on changes, this file stops compiling under `tsc --strict`.
import type { components, paths } from "./generated/api";

type Schemas = components["schemas"];
type Task = Schemas["Task"];
type TaskResultIn = Schemas["TaskResultIn"];
type ErrorBody = Schemas["Error"];

type OpenTaskBody = paths["/v1/agents/{agent}/tasks"]["post"]["requestBody"]["content"]["application/json"];
type OpenTaskAnswer = paths["/v1/agents/{agent}/tasks"]["post"]["responses"]["200"]["content"]["application/json"];

export interface Gateway {
  base: string;
  key: string;
}

async function call<T>(gateway: Gateway, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(gateway.base + path, {
    method,
    headers: { Authorization: `Bearer ${gateway.key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) {
    const error = (await response.json()) as ErrorBody;
    const detail = typeof error.detail === "string" ? error.detail : `${error.detail.code}: ${error.detail.message ?? ""}`;
    throw new Error(`${response.status} ${detail}`);
  }
  return (await response.json()) as T;
}

export async function ask(gateway: Gateway, callee: string, text: string): Promise<Task> {
  const body: OpenTaskBody = { message: { role: "user", parts: [{ text }], message_id: null } };
  const task: OpenTaskAnswer = await call(gateway, "POST", `/v1/agents/${encodeURIComponent(callee)}/tasks?wait=5`, body);
  return task;
}

/** The answer a callee gives: the document says which fields each state takes. */
export function answer(task: Task): TaskResultIn {
  const question = task.input.message.parts.find((part) => part.text !== undefined)?.text;
  if (question === undefined) {
    return { state: "failed", error: "nothing to answer" };
  }
  if (question.endsWith("?")) {
    return { state: "input_required", message: { role: "agent", parts: [{ text: "which one?" }] } };
  }
  return { state: "completed", artifacts: [{ name: "echo", parts: [{ text: question }] }] };
}

export function stateOf(result: TaskResultIn): "completed" | "failed" | "input_required" {
  switch (result.state) {
    case "completed":
      return result.state;
    case "failed":
      return result.state;
    case "input_required":
      // Only a question carries a required message.
      return result.message.parts.length > 0 ? result.state : result.state;
  }
}

export async function serve(gateway: Gateway): Promise<void> {
  const claimed = await call<Task | null>(gateway, "GET", "/v1/agents/me/tasks/next?wait=1");
  if (claimed !== null) {
    await call<Task>(gateway, "POST", `/v1/agents/me/tasks/${claimed.id}/result`, answer(claimed));
  }
}
