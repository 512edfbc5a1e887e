/**
 * Server-sent events (`text/event-stream`, the WHATWG rules) read from a fetch body with web
 * APIs only (`ReadableStream`, `TextDecoder`), so the same code runs on Node.js and edge runtimes.
 */

import { ForgebenchError } from "./errors.js";
import type { TaskEvent } from "./types.js";

/** One raw event: its `event:` name (`message` when none), `data:` lines joined, `id:` if any. */
export interface RawEvent {
  event: string;
  data: string;
  id: string | null;
}

/**
 * The events of `body`, in order, until the stream ends; comment lines (keep-alives) are skipped.
 * Leaving the loop early (or an abort) cancels the body, which closes the connection.
 */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<RawEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | null = null;
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      finished = done;
      for (let match = LINE_END.exec(buffer); match !== null; match = LINE_END.exec(buffer)) {
        // a "\r" last in the buffer may be the first half of a "\r\n" still to come
        if (match[0] === "\r" && match.index === buffer.length - 1 && !done) break;
        const line = buffer.slice(0, match.index);
        buffer = buffer.slice(match.index + match[0].length);
        if (line.length === 0) {
          if (data.length > 0) yield { event: event.length === 0 ? "message" : event, data: data.join("\n"), id };
          event = "";
          data = [];
          id = null;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let fieldValue = colon < 0 ? "" : line.slice(colon + 1);
        if (fieldValue.startsWith(" ")) fieldValue = fieldValue.slice(1);
        if (field === "event") event = fieldValue;
        else if (field === "data") data.push(fieldValue);
        else if (field === "id" && !fieldValue.includes("\0")) id = fieldValue;
      }
      // At the end, an event not closed by a blank line is dropped, as the rules say.
      if (done) return;
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

const LINE_END = /\r\n|\n|\r/;

const CHANGE_EVENTS: ReadonlySet<string> = new Set(["status", "progress", "question", "answer", "artifact", "final"]);

/**
 * A raw event of a task's stream as a `TaskEvent`, its `data` parsed; `undefined` for an event
 * of a kind the SDK does not know (one a later gateway may add), which is skipped.
 */
export function taskEventOf(raw: RawEvent): TaskEvent | undefined {
  let data: unknown;
  try {
    data = JSON.parse(raw.data) as unknown;
  } catch {
    throw new ForgebenchError(`the task's event stream sent an event whose data is not JSON (${raw.event})`, 200, raw.data);
  }
  if (typeof data !== "object" || data === null) {
    throw new ForgebenchError(`the task's event stream sent an event whose data is not an object (${raw.event})`, 200, data);
  }
  if (raw.event === "error") return { event: "error", id: null, data: data as { detail: unknown } };
  if (raw.id !== null && (raw.event === "task" || CHANGE_EVENTS.has(raw.event))) {
    return { event: raw.event, id: raw.id, data } as TaskEvent;
  }
  return undefined;
}
