/**
 * `forgebench.agents`: the caller's side (open, read and cancel tasks on a callee) and the
 * callee's side (claim tasks, reply to them, or `serve` in a loop).
 */

import { ConflictError, ForgebenchError } from "./errors.js";
import { TaskReply } from "./reply.js";
import { serve, type ServeHandler, type ServeOptions } from "./serve.js";
import type { ApiResponse, RequestSpec, Transport } from "./transport.js";
import type { Message, Part, PartData, Task, TaskResultIn } from "./types.js";

export interface CallOptions {
  /** A text part (the first part of the message). */
  text?: string;
  /** A data part (after the text part). */
  data?: PartData;
  /** Parts of your own (after the text and data parts): files, or more than one of a kind. */
  parts?: Part[];
  /** Seconds (0-30) to wait for the callee's answer; omitted or 0 answers at once. */
  wait?: number;
  /** Continue this conversation: another task's `context_id`. */
  contextId?: string;
  /** The governed call that caused this one (a call id); sent as `X-Parent-Call`. */
  parentCallId?: string;
  /**
   * Makes the open safe to repeat: the same id from this caller to this callee gives back the
   * same task. Generated once per call when omitted, and reused by its retries.
   */
  messageId?: string;
  signal?: AbortSignal;
}

export interface WaitOptions {
  /** Seconds (0-30) the gateway may hold the request; omitted or 0 answers at once. */
  wait?: number;
  signal?: AbortSignal;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export class Agents {
  readonly #transport: Transport;
  #ownId: Promise<string> | undefined;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Opens a task on `callee` (its name or id) and answers with it, after `wait` seconds at most. */
  async call(callee: string, options: CallOptions): Promise<Task> {
    const body: { message: Message; context_id?: string } = {
      message: { role: "user", parts: messageParts(options), message_id: options.messageId ?? newMessageId() },
    };
    if (options.contextId !== undefined) body.context_id = options.contextId;
    const headers: Record<string, string> =
      options.parentCallId === undefined ? {} : { "X-Parent-Call": options.parentCallId };
    return this.#task({
      method: "POST",
      path: `/v1/agents/${segment(callee)}/tasks`,
      query: { wait: options.wait },
      waitSeconds: options.wait,
      body,
      headers,
      signal: options.signal,
      // the message_id makes a repeat answer with the task the first attempt opened
      repeatable: true,
    });
  }

  /** Reads a task of `callee` (its name or id), waiting up to `wait` seconds for it to leave submitted/working. */
  async getTask(callee: string, taskId: string, options: WaitOptions = {}): Promise<Task> {
    return this.#task({
      method: "GET",
      path: `/v1/agents/${segment(callee)}/tasks/${segment(taskId)}`,
      query: { wait: options.wait },
      waitSeconds: options.wait,
      signal: options.signal,
    });
  }

  /** Cancels a task this agent opened; a task already finished comes back unchanged. */
  async cancelTask(callee: string, taskId: string, options: RequestOptions = {}): Promise<Task> {
    return this.#task({
      method: "POST",
      path: `/v1/agents/${segment(callee)}/tasks/${segment(taskId)}/cancel`,
      signal: options.signal,
      // canceling a finished (or canceled) task returns it unchanged
      repeatable: true,
    });
  }

  /** Claims the next task opened on this agent, or `null` when none arrived within `wait` seconds. */
  async nextTask(options: WaitOptions = {}): Promise<Task | null> {
    const response = await this.#transport.request({
      method: "GET",
      path: "/v1/agents/me/tasks/next",
      query: { wait: options.wait },
      waitSeconds: options.wait,
      signal: options.signal,
    });
    return response.status === 204 ? null : asTask(response);
  }

  /**
   * Answers a task this agent claimed, and returns the task as the answer left it. A reply
   * whose message has no `message_id` gets one, so that a retry lands once.
   */
  async reply(taskId: string, result: TaskResultIn | TaskReply, options: RequestOptions = {}): Promise<Task> {
    const body = withMessageId(result instanceof TaskReply ? result.result : result);
    let lostAnAttempt = false;
    try {
      return await this.#task({
        method: "POST",
        path: `/v1/agents/me/tasks/${segment(taskId)}/result`,
        body,
        signal: options.signal,
        // Safe to repeat only with a message_id (a question, or a result with a message): the
        // gateway then answers a repeat with the task. Any other result, repeated after it
        // landed, would be refused with 409 task_not_working.
        repeatable: body.message?.message_id !== undefined,
        onLostAttempt: () => {
          lostAnAttempt = true;
        },
      });
    } catch (error) {
      // An attempt whose answer was lost may have landed: the retry then finds the task
      // already in the state this reply gave it.
      if (lostAnAttempt && error instanceof ConflictError && error.state === body.state) {
        return this.getTask(await this.#agentId(), taskId, options);
      }
      throw error;
    }
  }

  /**
   * Claims tasks and answers each with what `handler` returns (see the README), until
   * `maxTasks` are handled or `signal` aborts; resolves with the number of tasks handled.
   */
  serve(handler: ServeHandler, options: ServeOptions = {}): Promise<number> {
    return serve(this, handler, options);
  }

  async #task(spec: RequestSpec): Promise<Task> {
    return asTask(await this.#transport.request(spec));
  }

  /** This agent's own id, read once. */
  #agentId(): Promise<string> {
    this.#ownId ??= this.#transport
      .request({ method: "GET", path: "/v1/agents/me" })
      .then(agentIdOf)
      .catch((error: unknown) => {
        this.#ownId = undefined;
        throw error;
      });
    return this.#ownId;
  }
}

function messageParts({ text, data, parts = [] }: CallOptions): Part[] {
  const all: Part[] = [];
  if (text !== undefined) all.push({ text });
  if (data !== undefined) all.push({ data });
  all.push(...parts);
  if (all.length === 0) throw new TypeError("call needs text, data or parts");
  return all;
}

function withMessageId(result: TaskResultIn): TaskResultIn {
  if (result.message === undefined || result.message.message_id !== undefined) return result;
  return { ...result, message: { ...result.message, message_id: newMessageId() } };
}

function newMessageId(): string {
  return globalThis.crypto.randomUUID();
}

function segment(value: string): string {
  if (value.length === 0) throw new TypeError("an agent or task id must not be empty");
  return encodeURIComponent(value);
}

function asTask({ status, body }: ApiResponse): Task {
  if (typeof body === "object" && body !== null && "id" in body && "status" in body) return body as Task;
  throw new ForgebenchError("the gateway answered with something that is not a task", status, body);
}

function agentIdOf({ status, body }: ApiResponse): string {
  if (typeof body === "object" && body !== null && "id" in body && typeof body.id === "string") return body.id;
  throw new ForgebenchError("the gateway answered GET /v1/agents/me without an id", status, body);
}
