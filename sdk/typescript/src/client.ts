/** The client: `new Forgebench({ baseUrl, apiKey })`, with its `agents` API. */

import { Agents } from "./agents.js";
import { Transport } from "./transport.js";

/**
 * The hosted service's URL, to pass as `baseUrl` when that is the gateway you mean. The SDK
 * never uses it on its own: there is no default gateway.
 */
export const HOSTED_URL = "https://api.forgebench.ai";

/** The variable read for the gateway's URL when the options give no `baseUrl`. */
export const URL_VARIABLE = "FORGEBENCH_URL";
/** The variable read for the agent key when the options give no `apiKey`. */
export const API_KEY_VARIABLE = "FORGEBENCH_API_KEY";

/** Retries of one request when `maxRetries` is not given; the same in every Forgebench SDK. */
export const DEFAULT_MAX_RETRIES = 2;
/** One attempt's timeout when `timeoutMs` is not given, on top of the request's `wait`. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ForgebenchOptions {
  /** The gateway's URL; else `FORGEBENCH_URL`. No default: without either the constructor throws. */
  baseUrl?: string;
  /** An agent key (`fb_agt_...`), the agent this client acts as; else `FORGEBENCH_API_KEY`. */
  apiKey?: string;
  /**
   * Retries of one request (default 2): after a 429 or 503 always; after no response, a 502 or
   * a 504 only when the request is safe to repeat (docs/sdks.md).
   */
  maxRetries?: number;
  /** How long one attempt may take, on top of the `wait` it asks the gateway for. Default 30 s. */
  timeoutMs?: number;
}

export class Forgebench {
  readonly agents: Agents;

  /** An option always wins over its environment variable; nothing is sent while constructing. */
  constructor(options: ForgebenchOptions = {}) {
    const baseUrl = options.baseUrl ?? environment(URL_VARIABLE);
    if (typeof baseUrl !== "string" || baseUrl.length === 0) {
      throw new TypeError(
        `Forgebench needs a baseUrl (or set ${URL_VARIABLE}): the gateway to send the key to, ` +
          `e.g. baseUrl: "${HOSTED_URL}" for the hosted service`,
      );
    }
    const apiKey = options.apiKey ?? environment(API_KEY_VARIABLE);
    if (typeof apiKey !== "string" || apiKey.length === 0) {
      throw new TypeError(`Forgebench needs an apiKey (an agent key; or set ${API_KEY_VARIABLE})`);
    }
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new RangeError("maxRetries must be 0 or more");
    if (!(timeoutMs > 0)) throw new RangeError("timeoutMs must be more than 0");
    const transport = new Transport({ baseUrl, apiKey, maxRetries, timeoutMs });
    this.agents = new Agents(transport);
  }
}

/** A variable of `process.env` where the runtime has one (Node.js, Bun); else undefined. */
function environment(name: string): string | undefined {
  if (typeof process === "undefined" || typeof process.env !== "object" || process.env === null) return undefined;
  const value = process.env[name];
  return value === undefined || value.length === 0 ? undefined : value;
}
