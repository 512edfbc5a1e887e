/**
 * The callee's loop: claim a task (long poll), hand it to the handler, post what the handler
 * returns, again and again, with `concurrency` such loops side by side.
 *
 * Stopping (the `signal` aborts) is graceful, as in every Forgebench SDK: no new claim starts,
 * a claim already waiting is let finish (at most `wait` seconds) and a task it brings is
 * handled, since a claimed task that nobody answers would only fail at its claim deadline;
 * handlers running finish and their replies are posted. Pauses between retries end at once.
 */

import { abortableSleep, backoffDelayMs } from "./backoff.js";
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ForgebenchError,
  PayloadTooLargeError,
  PermissionDeniedError,
  UnprocessableEntityError,
} from "./errors.js";
import { failedResult, reply, resultOf, thrownMessage, type HandlerReturn, type ReplyBuilder } from "./reply.js";
import { withTraceOf } from "./tracing.js";
import type { Task, TaskResultIn } from "./types.js";

/** Seconds each claim may wait for a task when `wait` is not given. */
export const DEFAULT_SERVE_WAIT_SECONDS = 20;

/** Longest pause between claims after repeated network errors. */
const MAX_CLAIM_BACKOFF_MS = 30_000;

/** Pause after an empty claim that did not wait (`wait: 0`), so an idle loop does not spin. */
const IDLE_PAUSE_MS = 1_000;

export type ServeHandler = (task: Task, reply: ReplyBuilder) => HandlerReturn | Promise<HandlerReturn>;

export interface ServeOptions {
  /** Stop after this many tasks; `null`/omitted serves until `signal` aborts. */
  maxTasks?: number | null;
  /**
   * Stops the loop: no new claim; a claim waiting is let finish (up to `wait` seconds) and a
   * task it brings is handled; handlers running finish and reply.
   */
  signal?: AbortSignal;
  /** Seconds each claim waits for a task (0-30). Default 20. */
  wait?: number;
  /** Handlers that may run at once, each with its own claim loop. Default 1. */
  concurrency?: number;
  /** Told of trouble the loop survives (a network error, a reply the gateway refused). Default: a warning on stderr. */
  onError?: (error: unknown, task: Task | undefined) => void;
}

/** What `serve` needs of the agents API. */
export interface TaskSource {
  nextTask(options: { wait?: number; signal?: AbortSignal }): Promise<Task | null>;
  reply(taskId: string, result: TaskResultIn): Promise<Task>;
}

/** The shared state of one `serve` call's loops. */
interface Loop {
  source: TaskSource;
  handler: ServeHandler;
  wait: number;
  budget: ClaimBudget;
  /** Aborts when the caller's signal does, or when a loop hits an error no retry mends. */
  signal: AbortSignal;
  /** Aborts only on an error no retry mends: what a waiting claim listens to. */
  fatal: AbortSignal;
  report: (error: unknown, task: Task | undefined) => void;
  stop: (fatal: unknown) => void;
  handled: number;
}

export async function serve(source: TaskSource, handler: ServeHandler, options: ServeOptions = {}): Promise<number> {
  const { maxTasks, wait, concurrency } = checkedOptions(options);
  const stopper = new AbortController();
  let fatal: { error: unknown } | undefined;
  const loop: Loop = {
    source,
    handler,
    wait,
    budget: new ClaimBudget(maxTasks),
    signal: options.signal === undefined ? stopper.signal : AbortSignal.any([options.signal, stopper.signal]),
    fatal: stopper.signal,
    report: reporter(options.onError ?? warn),
    stop: (error) => {
      fatal ??= { error };
      stopper.abort(error);
    },
    handled: 0,
  };
  await Promise.all(Array.from({ length: concurrency }, () => claimLoop(loop)));
  if (fatal !== undefined) throw fatal.error;
  return loop.handled;
}

/** How many more tasks may be claimed: a claim reserves one and gives it back when it comes back empty. */
class ClaimBudget {
  #left: number;

  constructor(maxTasks: number) {
    this.#left = maxTasks;
  }

  reserve(): boolean {
    if (this.#left <= 0) return false;
    this.#left -= 1;
    return true;
  }

  release(): void {
    this.#left += 1;
  }
}

async function claimLoop(loop: Loop): Promise<void> {
  let failures = 0;
  while (!loop.signal.aborted && loop.budget.reserve()) {
    let task: Task | null;
    try {
      // Not the caller's signal: a stop lets a waiting claim finish, so no claimed task is dropped.
      task = await loop.source.nextTask({ wait: loop.wait, signal: loop.fatal });
      failures = 0;
    } catch (error) {
      loop.budget.release();
      if (loop.signal.aborted) return;
      if (!isTransient(error)) return loop.stop(error);
      loop.report(error, undefined);
      await pause(backoffDelayMs(failures++, MAX_CLAIM_BACKOFF_MS), loop.signal);
      continue;
    }
    if (task === null) {
      loop.budget.release();
      if (loop.wait === 0) await pause(IDLE_PAUSE_MS, loop.signal);
      continue;
    }
    await answer(loop, task);
    loop.handled += 1;
  }
}

/** Runs the handler on a claimed task and posts its answer (a throw fails the task). */
async function answer(loop: Loop, task: Task): Promise<void> {
  let result: TaskResultIn;
  try {
    // in the trace the claimed task is in, when the application has OpenTelemetry
    result = resultOf(await withTraceOf(task, async () => loop.handler(task, reply)));
  } catch (thrown) {
    result = failedResult(thrownMessage(thrown));
  }
  await post(loop, task, result);
}

async function post(loop: Loop, task: Task, result: TaskResultIn): Promise<void> {
  try {
    await loop.source.reply(task.id, result);
  } catch (error) {
    if (isRefusedReply(error) && result.state !== "failed") {
      // The gateway could not take the handler's answer: fail the task rather than leave it working.
      return post(loop, task, failedResult(`the handler's reply was refused: ${thrownMessage(error)}`));
    }
    if (error instanceof AuthenticationError || error instanceof PermissionDeniedError) return loop.stop(error);
    if (error instanceof ConflictError && error.state === "canceled") return; // the caller canceled it meanwhile
    loop.report(error, task);
  }
}

/** Trouble that may pass: no response, too many polls, the gateway unavailable. */
function isTransient(error: unknown): boolean {
  if (!(error instanceof ForgebenchError)) return false;
  return error.status === 0 || error.status === 429 || error.status >= 500;
}

function isRefusedReply(error: unknown): boolean {
  return (
    error instanceof BadRequestError ||
    error instanceof PayloadTooLargeError ||
    error instanceof UnprocessableEntityError
  );
}

/** Sleeps, or returns early (without throwing) when the loop stops. */
async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await abortableSleep(ms, signal);
  } catch {
    // stopped: the loop condition ends the loop
  }
}

/** `onError`, made safe: what it throws cannot break the loop. */
function reporter(onError: NonNullable<ServeOptions["onError"]>): Loop["report"] {
  return (error, task) => {
    try {
      onError(error, task);
    } catch {
      // the report is advice; the loop goes on without it
    }
  };
}

function warn(error: unknown, task: Task | undefined): void {
  const where = task === undefined ? "claiming a task" : `answering task ${task.id}`;
  console.warn(`forgebench serve: ${where}: ${thrownMessage(error)}`);
}

function checkedOptions(options: ServeOptions): { maxTasks: number; wait: number; concurrency: number } {
  const maxTasks = options.maxTasks ?? Number.POSITIVE_INFINITY;
  if (maxTasks !== Number.POSITIVE_INFINITY && !isCount(maxTasks, 0)) {
    throw new RangeError("maxTasks must be a whole number of tasks (0 or more), or null");
  }
  const wait = options.wait ?? DEFAULT_SERVE_WAIT_SECONDS;
  if (!isCount(wait, 0)) throw new RangeError("wait must be a whole number of seconds (0 or more)");
  const concurrency = options.concurrency ?? 1;
  if (!isCount(concurrency, 1)) throw new RangeError("concurrency must be a whole number (1 or more)");
  return { maxTasks, wait, concurrency };
}

function isCount(value: number, least: number): boolean {
  return Number.isInteger(value) && value >= least;
}
