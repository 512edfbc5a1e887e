/**
 * A callee's answer: the reply builder a `serve` handler gets (`reply.done/ask/fail`), and the
 * rules that turn whatever a handler returns into the gateway's `TaskResultIn`.
 */

import type { Artifact, Message, Part, PartData, TaskResultIn } from "./types.js";

/** Longest error text the gateway keeps on a failed task (longer ones are cut to this). */
export const MAX_ERROR_CHARS = 4096;

/** The name of the artifact that text, data and plain return values go into. */
export const RESPONSE_ARTIFACT = "response";

/** An answer built with the reply builder; `result` is the body that is posted. */
export class TaskReply {
  readonly result: TaskResultIn;

  constructor(result: TaskResultIn) {
    this.result = result;
  }
}

export interface DoneOptions {
  /** Becomes a text part of the `response` artifact. */
  text?: string;
  /** Becomes a data part of the `response` artifact (after the text part, if both are given). */
  data?: PartData;
  /** Artifacts of your own, after the `response` artifact. */
  artifacts?: Artifact[];
}

/** The second argument of a `serve` handler. */
export interface ReplyBuilder {
  /** Completes the task: `text`/`data` make one `response` artifact, then `artifacts`. */
  done(options?: DoneOptions): TaskReply;
  /** Asks the caller something back: the task becomes `input_required` with this question. */
  ask(question: string | Message): TaskReply;
  /** Fails the task with this message as its `error`. */
  fail(message: string): TaskReply;
}

export const reply: ReplyBuilder = {
  done: (options = {}) => new TaskReply(completedResult(options)),
  ask: (question) => new TaskReply({ state: "input_required", message: questionMessage(question) }),
  fail: (message) => new TaskReply(failedResult(message)),
};

/** What a handler may return; see `resultOf` for what each becomes. */
export type HandlerReturn =
  | TaskReply
  | TaskResultIn
  | string
  | readonly Artifact[]
  | { readonly [field: string]: unknown }
  | number
  | boolean
  | null
  | undefined
  | void;

/**
 * The result a handler's return value stands for:
 * - a `TaskReply` (the reply builder) → its result;
 * - an object with `state` → taken as a `TaskResultIn` as it is;
 * - an object with `artifacts` and no `state` → completed with those artifacts;
 * - a string → completed with one text artifact;
 * - an array → completed with those artifacts;
 * - `undefined`/`null` → completed with no artifacts;
 * - any other JSON value (an object, a number, a boolean) → completed with one data artifact.
 * These are the rules a push endpoint's answer follows too.
 */
export function resultOf(value: HandlerReturn): TaskResultIn {
  if (value instanceof TaskReply) return value.result;
  if (value === undefined || value === null) return { state: "completed", artifacts: [] };
  if (typeof value === "string") return completedResult({ text: value });
  if (Array.isArray(value)) return { state: "completed", artifacts: [...(value as Artifact[])] };
  if (typeof value === "number" || typeof value === "boolean") return completedResult({ data: value });
  if (typeof value !== "object") {
    throw new TypeError(`a handler returned a ${typeof value}, which is not an answer`);
  }
  if ("state" in value) return value as TaskResultIn;
  if ("artifacts" in value) return { state: "completed", artifacts: value.artifacts as Artifact[] };
  return completedResult({ data: value });
}

/** A failed result carrying `message` (cut to what the gateway keeps; the gateway's default if empty). */
export function failedResult(message: string): TaskResultIn {
  const error = Array.from(message).slice(0, MAX_ERROR_CHARS).join("");
  return error.length === 0 ? { state: "failed" } : { state: "failed", error };
}

/** The message of anything thrown: an `Error`'s `message`, anything else as a string. */
export function thrownMessage(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}

function completedResult({ text, data, artifacts = [] }: DoneOptions): TaskResultIn {
  const parts: Part[] = [];
  if (text !== undefined) parts.push({ text });
  if (data !== undefined) parts.push({ data });
  const response: Artifact[] = parts.length > 0 ? [{ name: RESPONSE_ARTIFACT, parts }] : [];
  return { state: "completed", artifacts: [...response, ...artifacts] };
}

function questionMessage(question: string | Message): Message {
  const message: Message = typeof question === "string" ? { parts: [{ text: question }] } : question;
  return { ...message, role: "agent" };
}
