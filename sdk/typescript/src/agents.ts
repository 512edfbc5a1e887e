/**
 * `forgebench.agents`: the caller's side (open, read, answer and cancel tasks on a callee), the
 * callee's side (claim tasks, report progress, reply to them, or `serve` in a loop), task search
 * and agent cards.
 */

import { ConflictError, ForgebenchError } from "./errors.js";
import { readEvents, taskEventOf } from "./events.js";
import { TaskReply } from "./reply.js";
import { serve, type ServeHandler, type ServeOptions } from "./serve.js";
import type { ApiResponse, RequestSpec, Transport } from "./transport.js";
import {
  hideSecret,
  itemsOf,
  listOf,
  objectOf,
  pageOf,
  segment,
  type RequestOptions,
} from "./wire.js";
import type {
  Agent,
  AgentCard,
  AgentFields,
  AgentPatch,
  Binding,
  BindingPatch,
  Bindings,
  DeliveryAttempt,
  EndpointHealth,
  EndpointIn,
  KeyCreated,
  KeyInfo,
  KeyRevoked,
  Message,
  Part,
  PartData,
  Redriven,
  Replayed,
  ReplayedNotification,
  Role,
  Task,
  TaskResultIn,
  TaskState,
  TaskEvent,
  TaskSummary,
  Tool,
  ToolIn,
  ToolRemoved,
} from "./types.js";

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
  /**
   * The callee's skill (a skill id of its card, one of its tools) the task is opened for. A
   * binding whose contract lists skills refuses an open naming another one, or none
   * (`PermissionDeniedError`); the task keeps it as `skill`.
   */
  skill?: string;
  signal?: AbortSignal;
}

export interface WaitOptions {
  /** Seconds (0-30) the gateway may hold the request; omitted or 0 answers at once. */
  wait?: number;
  signal?: AbortSignal;
}

export type { RequestOptions };

/** A message of the caller's answer (`answer`) or of the callee's progress report (`progress`). */
export interface MessageOptions {
  /** A text part (the first part of the message). */
  text?: string;
  /** A data part (after the text part). */
  data?: PartData;
  /** Parts of your own (after the text and data parts). */
  parts?: Part[];
  /**
   * Makes the write safe to repeat: the gateway records a message id once per task and side.
   * Generated once per call when omitted, and reused by its retries.
   */
  messageId?: string;
  signal?: AbortSignal;
}

/** Whose tasks a search covers, seen from the agent: opened on it, opened by it, or both. */
export type TaskDirection = "inbound" | "outbound" | "both";

/** The filters of `GET /v1/tasks`, every one optional. */
export interface TaskSearch {
  /** Whose tasks (a name or an id); an agent key may name only itself. */
  agent?: string;
  /** Default `both`. */
  direction?: TaskDirection;
  state?: TaskState;
  /** One conversation's tasks. */
  contextId?: string;
  /** Words, every one of which must be in the task (the first 8 distinct ones are read). */
  q?: string;
  /** Only tasks changed after this moment (a `Date`, or RFC 3339 text). */
  since?: Date | string;
  /** Tasks per page, 1-100 (the gateway's default: 50). */
  limit?: number;
  /** The `nextCursor` of the previous page of the same search. */
  cursor?: string;
  signal?: AbortSignal;
}

/** One page of a task search, newest first by creation (docs/api.md, "Task search"). */
export interface TaskPage {
  tasks: TaskSummary[];
  /** The next page's `cursor`; `null` on the last page. */
  nextCursor: string | null;
}

/** Which page of the tenant's agent cards to read (`cards`), or the page size (`allCards`). */
export interface CardsOptions {
  /** Agents read for this page, 1-50 (the gateway's default: 20). */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  signal?: AbortSignal;
}

/** One page of the tenant's agent cards (the agents not retired), by name. */
export interface CardPage {
  cards: AgentCard[];
  /** The next page's `cursor`; `null` on the last page. */
  nextCursor: string | null;
}

/** Where `events` starts: the task first, or after the change numbered `lastEventId`. */
export interface EventsOptions {
  /** The `id` of the last event already seen: the stream resumes after it, without the `task` event. */
  lastEventId?: string | number;
  /** Aborting it closes the stream; the iteration then throws the abort's reason. */
  signal?: AbortSignal;
}

const BINDING_FIELDS = ["id", "caller_agent_id", "callee_agent_id", "revoked"] as const;

export class Agents {
  readonly #transport: Transport;
  #ownId: Promise<string> | undefined;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Opens a task on `callee` (its name or id) and answers with it, after `wait` seconds at most.
   * Refused by the gate (no live binding, a skill its contract does not list, a call-tree limit):
   * `PermissionDeniedError`. Past the binding's rate, concurrency or daily quota: a
   * `RateLimitError` with `code` `quota_exceeded`; it opened nothing, so it is retried as any 429
   * is (a `Retry-After` up to 30 s is waited for, the retry carrying the same `message_id`).
   */
  async call(callee: string, options: CallOptions): Promise<Task> {
    const body: { message: Message; context_id?: string; skill?: string } = {
      message: newMessage("user", options, "call"),
    };
    if (options.contextId !== undefined) body.context_id = options.contextId;
    if (options.skill !== undefined) {
      if (options.skill.length === 0) throw new TypeError("a skill must not be empty");
      body.skill = options.skill;
    }
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

  /**
   * Answers the question of a task this agent opened (one in `input_required`), in place: the
   * task goes back to `working` with the answer in its history. Safe to repeat (message_id).
   */
  async answer(callee: string, taskId: string, options: MessageOptions): Promise<Task> {
    return this.#task({
      method: "POST",
      path: `/v1/agents/${segment(callee)}/tasks/${segment(taskId)}/messages`,
      body: { message: newMessage("user", options, "answer") },
      signal: options.signal,
      // the gateway records the message_id once: a repeat answers with the task as it stands
      repeatable: true,
    });
  }

  /**
   * Searches the tasks this key may see (`GET /v1/tasks`) and answers with one page; pass its
   * `nextCursor` as `cursor` for the next one, or use `allTasks`.
   */
  async searchTasks(search: TaskSearch = {}): Promise<TaskPage> {
    const { status, body } = await this.#transport.request({
      method: "GET",
      path: "/v1/tasks",
      query: {
        agent: search.agent,
        direction: search.direction,
        state: search.state,
        context_id: search.contextId,
        q: search.q,
        since: search.since instanceof Date ? search.since.toISOString() : search.since,
        limit: search.limit,
        cursor: search.cursor,
      },
      signal: search.signal,
    });
    const page = pageOf(status, body, "items", "a task search");
    return { tasks: page.items as TaskSummary[], nextCursor: page.nextCursor };
  }

  /**
   * Every task of a search, page after page (`limit` is the page size), each once:
   * `for await (const task of forgebench.agents.allTasks({ state: "completed" }))`.
   */
  async *allTasks(search: TaskSearch = {}): AsyncGenerator<TaskSummary, void, undefined> {
    let cursor = search.cursor;
    do {
      const page = await this.searchTasks({ ...search, cursor });
      yield* page.tasks;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** The signed A2A card of `agent` (its name or id). */
  async card(agent: string, options: RequestOptions = {}): Promise<AgentCard> {
    const { status, body } = await this.#transport.request({
      method: "GET",
      path: `/v1/agents/${segment(agent)}/.well-known/agent-card.json`,
      signal: options.signal,
    });
    if (typeof body === "object" && body !== null && "name" in body && "signatures" in body) return body as AgentCard;
    throw new ForgebenchError("the gateway answered with something that is not an agent card", status, body);
  }

  /** One page of the cards of the tenant's agents, by name; or use `allCards`. */
  async cards(options: CardsOptions = {}): Promise<CardPage> {
    const { status, body } = await this.#transport.request({
      method: "GET",
      path: "/v1/agents/cards",
      query: { limit: options.limit, cursor: options.cursor },
      signal: options.signal,
    });
    const page = pageOf(status, body, "cards", "a page of cards");
    return { cards: page.items as AgentCard[], nextCursor: page.nextCursor };
  }

  /** Every card of the tenant's agents, page after page (`limit` is the page size). */
  async *allCards(options: CardsOptions = {}): AsyncGenerator<AgentCard, void, undefined> {
    let cursor = options.cursor;
    do {
      const page = await this.cards({ ...options, cursor });
      yield* page.cards;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
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
   * Reports progress on a task this agent claimed: it stays `working`, and the message joins
   * its history (and its `status.message`). Safe to repeat (message_id).
   */
  async progress(taskId: string, options: MessageOptions): Promise<Task> {
    return this.#task({
      method: "POST",
      path: `/v1/agents/me/tasks/${segment(taskId)}/progress`,
      body: { message: newMessage("agent", options, "progress") },
      signal: options.signal,
      // the gateway records the message_id once: a repeat answers with the task as it stands
      repeatable: true,
    });
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

  // -- Managing agents (a person's key: an admin, or the agent's owner; see docs/api.md) ----------

  /** Creates an agent named `name` (`POST /v1/agents`); the creating person owns it unless `owner_member_id` says. */
  async create(name: string, fields: AgentFields = {}, options: RequestOptions = {}): Promise<Agent> {
    return agentOf(
      await this.#transport.request({ method: "POST", path: "/v1/agents", body: { ...fields, name }, signal: options.signal }),
    );
  }

  /** Every agent of the tenant, by name (`GET /v1/agents`; persons only). */
  async list(options: RequestOptions = {}): Promise<Agent[]> {
    return itemsOf<Agent>(
      await this.#transport.request({ method: "GET", path: "/v1/agents", signal: options.signal }),
      "a list of agents",
    );
  }

  /** An agent by name or id (`GET /v1/agents/{agent}`). */
  async get(agent: string, options: RequestOptions = {}): Promise<Agent> {
    return agentOf(await this.#transport.request({ method: "GET", path: `/v1/agents/${segment(agent)}`, signal: options.signal }));
  }

  /**
   * Changes an agent's `status`, `description`, `claim_timeout_seconds` or `input_modes`
   * (`PATCH /v1/agents/{agent}`); its name never changes. Pausing suspends its keys; retiring is final.
   */
  async update(agent: string, patch: AgentPatch, options: RequestOptions = {}): Promise<Agent> {
    return agentOf(
      await this.#transport.request({
        method: "PATCH",
        path: `/v1/agents/${segment(agent)}`,
        body: patch,
        signal: options.signal,
      }),
    );
  }

  /** The agent behind this client's agent key (`GET /v1/agents/me`). */
  async me(options: RequestOptions = {}): Promise<Agent> {
    return agentOf(await this.#transport.request({ method: "GET", path: "/v1/agents/me", signal: options.signal }));
  }

  /** Every key the agent ever held, live and revoked, never a secret (`GET /v1/agents/{agent}/keys`). */
  async keys(agent: string, options: RequestOptions = {}): Promise<KeyInfo[]> {
    return itemsOf<KeyInfo>(
      await this.#transport.request({ method: "GET", path: `/v1/agents/${segment(agent)}/keys`, signal: options.signal }),
      "a list of keys",
    );
  }

  /**
   * Issues a key for `agent` (`POST /v1/agents/{agent}/keys`): `{ key_id, key }`, the key shown
   * once and kept out of logs (not enumerable). Not retried after a lost answer (a second key).
   */
  async issueKey(agent: string, options: RequestOptions = {}): Promise<KeyCreated> {
    const response = await this.#transport.request({
      method: "POST",
      path: `/v1/agents/${segment(agent)}/keys`,
      signal: options.signal,
    });
    return hideSecret(objectOf<KeyCreated>(response, ["key_id", "key"], "a new key"), "key");
  }

  /** Revokes a key of `agent` (`DELETE /v1/agents/{agent}/keys/{keyId}`); it is refused (401) from then on. */
  async revokeKey(agent: string, keyId: string, options: RequestOptions = {}): Promise<KeyRevoked> {
    const response = await this.#transport.request({
      method: "DELETE",
      path: `/v1/agents/${segment(agent)}/keys/${segment(keyId)}`,
      signal: options.signal,
    });
    return objectOf<KeyRevoked>(response, ["key_id", "revoked"], "a revoked key");
  }

  /**
   * Grants `caller` (a name or id) bindings to 1-25 `callees` (`POST /v1/agents/{caller}/agents`),
   * all or nothing: one binding per distinct callee, approved at once when the granter also
   * speaks for the callee, else pending its approval (`approve`).
   */
  async grant(caller: string, callees: readonly string[], options: RequestOptions = {}): Promise<Binding[]> {
    const response = await this.#transport.request({
      method: "POST",
      path: `/v1/agents/${segment(caller)}/agents`,
      body: { callees },
      signal: options.signal,
      // granting a live pair again changes nothing
      repeatable: true,
    });
    return listOf<Binding>(response, BINDING_FIELDS, "a list of bindings");
  }

  /** The agent's bindings: `outbound` (it calls) and `inbound` (it is called) (`GET /v1/agents/{agent}/agents`). */
  async bindings(agent: string, options: RequestOptions = {}): Promise<Bindings> {
    const response = await this.#transport.request({
      method: "GET",
      path: `/v1/agents/${segment(agent)}/agents`,
      signal: options.signal,
    });
    return objectOf<Bindings>(response, ["outbound", "inbound"], "an agent's bindings");
  }

  /** Approves a pending binding to `agent`, the callee (`POST /v1/agents/{agent}/agents/{bindingId}/approve`). */
  async approve(agent: string, bindingId: string, options: RequestOptions = {}): Promise<Binding> {
    const response = await this.#transport.request({
      method: "POST",
      path: `/v1/agents/${segment(agent)}/agents/${segment(bindingId)}/approve`,
      signal: options.signal,
      // approving an approved binding returns it unchanged
      repeatable: true,
    });
    return objectOf<Binding>(response, BINDING_FIELDS, "a binding");
  }

  /** Revokes a binding from either side (`DELETE /v1/agents/{agent}/agents/{bindingId}`); the row is kept. */
  async revokeBinding(agent: string, bindingId: string, options: RequestOptions = {}): Promise<Binding> {
    const response = await this.#transport.request({
      method: "DELETE",
      path: `/v1/agents/${segment(agent)}/agents/${segment(bindingId)}`,
      signal: options.signal,
    });
    return objectOf<Binding>(response, BINDING_FIELDS, "a binding");
  }

  /**
   * Sets a binding's own call-tree limits and contract (`PATCH /v1/agents/{agent}/agents/{bindingId}`;
   * an admin; `agent` is either side, the caller or the callee) and resolves with the binding and
   * its `usage`. `limits` and `contract` are merge patches: a field given replaces its value,
   * `null` removes it, a field left out stays; an object left out stays whole. Audited as
   * `binding.contract`. A value out of range is a `BadRequestError`; a binding that is not there
   * (or an agent that is neither side) a `NotFoundError`; a member's or viewer's key a
   * `PermissionDeniedError`. Not retried after a lost answer, like every `PATCH`.
   */
  async updateBinding(agent: string, bindingId: string, patch: BindingPatch, options: RequestOptions = {}): Promise<Binding> {
    const response = await this.#transport.request({
      method: "PATCH",
      path: `/v1/agents/${segment(agent)}/agents/${segment(bindingId)}`,
      body: patch,
      signal: options.signal,
    });
    return objectOf<Binding>(response, BINDING_FIELDS, "a binding");
  }

  /**
   * Sets the agent's push endpoint, or clears it with `{ url: null }` (back to pull)
   * (`PUT /v1/agents/{agent}/endpoint`). A credential's secret is sealed and never comes back.
   */
  async setEndpoint(agent: string, config: EndpointIn, options: RequestOptions = {}): Promise<Agent> {
    return agentOf(
      await this.#transport.request({
        method: "PUT",
        path: `/v1/agents/${segment(agent)}/endpoint`,
        body: config,
        signal: options.signal,
      }),
    );
  }

  /** The agent's tool bindings, the skills of its card (`GET /v1/agents/{agent}/tools`). */
  async tools(agent: string, options: RequestOptions = {}): Promise<Tool[]> {
    return itemsOf<Tool>(
      await this.#transport.request({ method: "GET", path: `/v1/agents/${segment(agent)}/tools`, signal: options.signal }),
      "a list of tools",
    );
  }

  /** Binds (or replaces) the tool `tool` of `agent`, a skill of its card (`PUT /v1/agents/{agent}/tools/{tool}`). */
  async putTool(agent: string, tool: string, spec: ToolIn, options: RequestOptions = {}): Promise<Tool> {
    const response = await this.#transport.request({
      method: "PUT",
      path: `/v1/agents/${segment(agent)}/tools/${segment(tool)}`,
      body: spec,
      signal: options.signal,
    });
    return objectOf<Tool>(response, ["name", "description", "tags"], "a tool");
  }

  /** Removes the tool `tool` of `agent` (`DELETE /v1/agents/{agent}/tools/{tool}`); it drops off the card. */
  async deleteTool(agent: string, tool: string, options: RequestOptions = {}): Promise<ToolRemoved> {
    const response = await this.#transport.request({
      method: "DELETE",
      path: `/v1/agents/${segment(agent)}/tools/${segment(tool)}`,
      signal: options.signal,
    });
    return objectOf<ToolRemoved>(response, ["name", "removed"], "a removed tool");
  }

  /**
   * The task's changes as they happen (`GET /v1/agents/{callee}/tasks/{taskId}/events`, server-sent
   * events), each parsed: first the task itself (`event: "task"`), then one event per change
   * (`status`, `progress`, `question`, `answer`, `artifact`, `final`). The iteration ends when the
   * gateway ends the stream: after `final`, at once for a finished task, or after its time
   * bound; an `error` event (no `id`) is the last of a stream that could not go on. Resume with
   * `lastEventId` (the `id` of the last event seen): every later change comes, no `task` event.
   * Leaving the loop, or aborting `signal`, closes the stream.
   */
  events(callee: string, taskId: string, options: EventsOptions = {}): AsyncIterable<TaskEvent> {
    const transport = this.#transport;
    const path = `/v1/agents/${segment(callee)}/tasks/${segment(taskId)}/events`;
    return {
      async *[Symbol.asyncIterator](): AsyncGenerator<TaskEvent, void, undefined> {
        const { body } = await transport.stream({
          method: "GET",
          path,
          headers: options.lastEventId === undefined ? {} : { "Last-Event-ID": String(options.lastEventId) },
          signal: options.signal,
        });
        for await (const raw of readEvents(body)) {
          const event = taskEventOf(raw);
          if (event !== undefined) yield event;
        }
      },
    };
  }

  /** The push delivery attempts of a task (`GET /v1/agents/{callee}/tasks/{taskId}/attempts`), oldest first. */
  async attempts(callee: string, taskId: string, options: RequestOptions = {}): Promise<DeliveryAttempt[]> {
    return itemsOf<DeliveryAttempt>(
      await this.#transport.request({
        method: "GET",
        path: `/v1/agents/${segment(callee)}/tasks/${segment(taskId)}/attempts`,
        signal: options.signal,
      }),
      "a list of delivery attempts",
    );
  }

  // -- Operating push deliveries (docs/api.md, "Operating deliveries") ----------------------------

  /**
   * The push endpoint's health (`GET /v1/agents/{agent}/endpoint/health`): its `state` (`active`,
   * `failing`: its latest attempt failed, `disabled`), the run of `consecutive_failures` since
   * `failing_since`, `last_error`, and the deliveries counted since yesterday (`attempts`,
   * `success_rate`). The agent's owner, an admin or a viewer; an agent without a push endpoint is
   * a `NotFoundError`.
   */
  async endpointHealth(agent: string, options: RequestOptions = {}): Promise<EndpointHealth> {
    return healthOf(
      await this.#transport.request({
        method: "GET",
        path: `/v1/agents/${segment(agent)}/endpoint/health`,
        signal: options.signal,
      }),
    );
  }

  /**
   * Switches a disabled push endpoint on again (`POST /v1/agents/{agent}/endpoint/enable`; an
   * admin) and resolves with its health: `disabled` and the run of failures cleared, audited as
   * `agent.endpoint.enable`. An endpoint that is not disabled is left as it is. A member's or
   * viewer's key is a `PermissionDeniedError`; an agent without a push endpoint a `NotFoundError`.
   */
  async enableEndpoint(agent: string, options: RequestOptions = {}): Promise<EndpointHealth> {
    return healthOf(
      await this.#transport.request({
        method: "POST",
        path: `/v1/agents/${segment(agent)}/endpoint/enable`,
        signal: options.signal,
        // enabling an endpoint that is not disabled changes nothing
        repeatable: true,
      }),
    );
  }

  /**
   * Attempts again now every delivery still waiting for a retry, of the agent's tasks opened at or
   * after `since` (a `Date`, or RFC 3339 text) (`POST /v1/agents/{agent}/endpoint/redrive`; the
   * agent's owner or an admin). At most 100 tasks a call, oldest first; each delivery keeps its
   * `webhook-id` and gets a fresh retry budget. Call again with `next_since` while it is not
   * `null`. A `since` the gateway cannot read is a `BadRequestError`, a disabled endpoint a
   * `ConflictError`. Not retried after a lost answer: a repeat would attempt them once more.
   */
  async redriveDeliveries(agent: string, since: Date | string, options: RequestOptions = {}): Promise<Redriven> {
    const response = await this.#transport.request({
      method: "POST",
      path: `/v1/agents/${segment(agent)}/endpoint/redrive`,
      body: { since: rfc3339(since) },
      signal: options.signal,
    });
    return objectOf<Redriven>(response, ["redriven", "task_ids", "next_since"], "a redrive's answer");
  }

  /**
   * Attempts a push task's waiting delivery now (`POST /v1/agents/{callee}/tasks/{taskId}/replay`,
   * answered 202; the callee's owner or an admin). It keeps its `webhook-id` and gets a fresh retry
   * budget. Only a push task still waiting for its delivery is replayed: a finished, pull or
   * accepted task, an attempt under way or a disabled endpoint is a `ConflictError`; an unknown
   * task a `NotFoundError`. Not retried after a lost answer.
   */
  async replayDelivery(callee: string, taskId: string, options: RequestOptions = {}): Promise<Replayed> {
    const response = await this.#transport.request({
      method: "POST",
      path: `/v1/agents/${segment(callee)}/tasks/${segment(taskId)}/replay`,
      signal: options.signal,
    });
    return objectOf<Replayed>(response, ["task_id", "webhook_id"], "a replay's answer");
  }

  /**
   * Sends an A2A push notification config of the task the latest event it received, again
   * (`POST /v1/agents/{callee}/tasks/{taskId}/notifications/{configId}/replay`, answered 202), under
   * the `webhook-id` it was first sent under (`{task_id}:{config_id}:{event}`, so a receiver that
   * handled it drops it), with the config's current credentials and a fresh retry budget. The task's
   * caller (the agent that manages its push notification configs) or an admin; anyone else who may
   * read the task is a `PermissionDeniedError`. A config the task does not have is a
   * `NotFoundError`; one that has received no event yet, or while an event is being sent to it, a
   * `ConflictError`. Not retried after a lost answer: a repeat would send the event once more.
   */
  async replayNotification(
    callee: string,
    taskId: string,
    configId: string,
    options: RequestOptions = {},
  ): Promise<ReplayedNotification> {
    const response = await this.#transport.request({
      method: "POST",
      path: `/v1/agents/${segment(callee)}/tasks/${segment(taskId)}/notifications/${segment(configId)}/replay`,
      signal: options.signal,
    });
    return objectOf<ReplayedNotification>(
      response,
      ["task_id", "config_id", "event", "webhook_id"],
      "a notification replay's answer",
    );
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

/** The message of `options`: its text part, then its data part, then its parts, with a message_id. */
function newMessage(role: Role, { text, data, parts = [], messageId }: MessageOptions, verb: string): Message {
  const all: Part[] = [];
  if (text !== undefined) all.push({ text });
  if (data !== undefined) all.push({ data });
  all.push(...parts);
  if (all.length === 0) throw new TypeError(`${verb} needs text, data or parts`);
  return { role, parts: all, message_id: messageId ?? newMessageId() };
}

function withMessageId(result: TaskResultIn): TaskResultIn {
  if (result.message === undefined || result.message.message_id !== undefined) return result;
  return { ...result, message: { ...result.message, message_id: newMessageId() } };
}

function newMessageId(): string {
  return globalThis.crypto.randomUUID();
}

function asTask({ status, body }: ApiResponse): Task {
  if (typeof body === "object" && body !== null && "id" in body && "status" in body) return body as Task;
  throw new ForgebenchError("the gateway answered with something that is not a task", status, body);
}

function healthOf(response: ApiResponse): EndpointHealth {
  return objectOf<EndpointHealth>(response, ["agent_id", "url", "state", "attempts"], "an endpoint's health");
}

/** `since` as RFC 3339 text: a `Date` (which must be valid), or a non-empty string sent as it is. */
function rfc3339(since: Date | string): string {
  if (since instanceof Date) {
    if (Number.isNaN(since.getTime())) throw new TypeError("since is an invalid Date");
    return since.toISOString();
  }
  if (since.length === 0) throw new TypeError("since must not be empty");
  return since;
}

function agentOf(response: ApiResponse): Agent {
  return objectOf<Agent>(response, ["id", "name", "status"], "an agent");
}

function agentIdOf({ status, body }: ApiResponse): string {
  if (typeof body === "object" && body !== null && "id" in body && typeof body.id === "string") return body.id;
  throw new ForgebenchError("the gateway answered GET /v1/agents/me without an id", status, body);
}
