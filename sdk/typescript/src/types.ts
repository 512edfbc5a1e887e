/**
 * The gateway's REST shapes, as the wire carries them (snake_case). A `Task` here is exactly the
 * JSON every task route answers with; the helpers in `text.ts` read it.
 */

/** Where a task stands. `submitted` and `working` are pending; the other four are answers. */
export type TaskState =
  | "submitted"
  | "working"
  | "input_required"
  | "completed"
  | "failed"
  | "canceled";

/** A file a part points at; the gateway stores the reference, never the file. */
export interface FileRef {
  uri: string;
  name?: string;
  mime?: string;
}

/**
 * Structured JSON a data part carries: any JSON value. It is typed `any` so that a handler can
 * read into it (`part.data?.invoice_id`) without a cast; check what you read before you use it.
 */
export type PartData = any;

/** A text part: `{"text": "..."}`. */
export interface TextPart {
  text: string;
  data?: never;
  file?: never;
}

/** A data part: `{"data": <any JSON>}`. */
export interface DataPart {
  data: PartData;
  text?: never;
  file?: never;
}

/** A file part: `{"file": {"uri", "name"?, "mime"?}}`. */
export interface FilePart {
  file: FileRef;
  text?: never;
  data?: never;
}

/** A message part is exactly one of text, data or file, never more than one. */
export type Part = TextPart | DataPart | FilePart;

/** Who wrote a message: the caller (`user`) or the callee (`agent`). */
export type Role = "user" | "agent";

export interface Message {
  role?: Role;
  parts: Part[];
  /** Makes the write that carries the message safe to repeat (see the gateway's API decisions). */
  message_id?: string;
}

/** A named output of a completed task. */
export interface Artifact {
  name?: string;
  parts: Part[];
}

export interface TaskStatus {
  state: TaskState;
  /** The callee's question while `input_required`; a completed result's message, if any. */
  message: Message | null;
  timestamp: string;
}

/** A task as every task route returns it. */
export interface Task {
  id: string;
  /** The conversation this task belongs to; pass it as `contextId` to continue it. */
  context_id: string;
  caller_agent_id: string;
  callee_agent_id: string;
  status: TaskStatus;
  input: { message: Message };
  artifacts: Artifact[];
  error: string | null;
  /** Every message of the exchange, oldest first. */
  history: Message[];
  /** The governed call that opened the task: the parent of the calls its handler makes. */
  call_id: string | null;
  parent_call_id: string | null;
  root_call_id: string | null;
  delivery: "pull" | "push";
  created_at: string;
  updated_at: string;
}

/**
 * A task as a search lists it (`GET /v1/tasks`): every field of a `Task` but its `history`
 * (read the task itself for that).
 */
export type TaskSummary = Omit<Task, "history" | "error" | "parent_call_id"> & {
  error?: string | null;
  parent_call_id?: string | null;
};

/** An agent's signed A2A 1.0 card, as `GET /v1/agents/{agent}/.well-known/agent-card.json` returns it. */
export interface AgentCard {
  name: string;
  description: string;
  version: string;
  /** The REST task route: `{base}/v1/agents/{id}/tasks`. */
  url: string;
  supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[];
  provider?: { organization?: string; url?: string };
  capabilities: { streaming?: boolean; pushNotifications?: boolean; extendedAgentCard?: boolean };
  defaultInputModes: string[];
  defaultOutputModes: string[];
  securitySchemes: Record<string, unknown>;
  securityRequirements: { schemes: Record<string, unknown> }[];
  /** One per tool binding; empty for an agent without tools. */
  skills: { id: string; name: string; description: string; tags: string[] }[];
  /** Two JWS entries over the card (see the gateway's docs); verify them before trusting the card. */
  signatures: { protected: string; signature: string }[];
}

/** The states a pull callee may answer with. */
export type ResultState = "completed" | "failed" | "input_required";

/** The body of `POST /v1/agents/me/tasks/{id}/result`: a callee's answer. */
export interface TaskResultIn {
  state: ResultState;
  artifacts?: Artifact[];
  /** The question of an `input_required` result; optional on `completed`. */
  message?: Message;
  /** What went wrong, for `failed`. */
  error?: string;
}
