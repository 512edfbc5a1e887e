/** Small helpers every API of the client shares: path segments, pages, checked answers. */

import { ForgebenchError } from "./errors.js";
import type { ApiResponse } from "./transport.js";

/** Signal of one request, the option every method takes. */
export interface RequestOptions {
  signal?: AbortSignal;
}

/** A path segment, encoded; an empty one is refused before anything is sent. */
export function segment(value: string): string {
  if (value.length === 0) throw new TypeError("an agent or task id must not be empty");
  return encodeURIComponent(value);
}

/** The list (under `key`) and `next_cursor` of a page, checked. */
export function pageOf(
  status: number,
  body: unknown,
  key: string,
  what: string,
): { items: unknown[]; nextCursor: string | null } {
  if (typeof body === "object" && body !== null && key in body && "next_cursor" in body) {
    const items: unknown = (body as Record<string, unknown>)[key];
    const cursor = body.next_cursor;
    if (Array.isArray(items) && (cursor === null || typeof cursor === "string")) {
      return { items, nextCursor: cursor === null || cursor.length === 0 ? null : cursor };
    }
  }
  throw new ForgebenchError(`the gateway answered with something that is not ${what}`, status, body);
}

/** The `items` list of `{"items": [...]}`, checked. */
export function itemsOf<T>({ status, body }: ApiResponse, what: string): T[] {
  if (typeof body === "object" && body !== null && "items" in body && Array.isArray(body.items)) return body.items as T[];
  throw new ForgebenchError(`the gateway answered with something that is not ${what}`, status, body);
}

/** The body as `T` when it is an object holding every one of `fields`; else a `ForgebenchError`. */
export function objectOf<T>({ status, body }: ApiResponse, fields: readonly string[], what: string): T {
  if (typeof body === "object" && body !== null && !Array.isArray(body) && fields.every((field) => field in body)) {
    return body as T;
  }
  throw new ForgebenchError(`the gateway answered with something that is not ${what}`, status, body);
}

/** The body as a list of `T` (each an object holding `fields`); else a `ForgebenchError`. */
export function listOf<T>({ status, body }: ApiResponse, fields: readonly string[], what: string): T[] {
  if (
    Array.isArray(body) &&
    body.every((item: unknown) => typeof item === "object" && item !== null && fields.every((field) => field in item))
  ) {
    return body as T[];
  }
  throw new ForgebenchError(`the gateway answered with something that is not ${what}`, status, body);
}

/**
 * Makes `field` (a secret the gateway shows once) not enumerable: still read as `object.field`,
 * but left out of `console.log`, `JSON.stringify` and spreads, so a logged answer never shows it.
 */
export function hideSecret<T extends object>(object: T, field: string): T {
  const value: unknown = (object as Record<string, unknown>)[field];
  if (value !== undefined) Object.defineProperty(object, field, { value, enumerable: false, writable: false });
  return object;
}
