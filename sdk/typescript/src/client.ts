/** The client: `new Forgebench({ baseUrl, apiKey })`, with its `agents` API. */

import { Agents } from "./agents.js";
import { Transport } from "./transport.js";

export const DEFAULT_BASE_URL = "https://api.forgebench.ai";

export interface ForgebenchOptions {
  /** The gateway's URL. Default `https://api.forgebench.ai`. */
  baseUrl?: string;
  /** An agent key (`fb_agt_...`): the agent this client acts as, caller or callee. */
  apiKey: string;
  /** Retries of a request that got no response, a 429 or a 502/503/504. Default 4. */
  maxRetries?: number;
  /** How long one attempt may take, on top of the `wait` it asks the gateway for. Default 30 s. */
  timeoutMs?: number;
}

export class Forgebench {
  readonly agents: Agents;

  constructor(options: ForgebenchOptions) {
    if (typeof options.apiKey !== "string" || options.apiKey.length === 0) {
      throw new TypeError("Forgebench needs an apiKey (an agent key)");
    }
    const maxRetries = options.maxRetries ?? 4;
    const timeoutMs = options.timeoutMs ?? 30_000;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new RangeError("maxRetries must be 0 or more");
    if (!(timeoutMs > 0)) throw new RangeError("timeoutMs must be more than 0");
    const transport = new Transport({
      baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
      apiKey: options.apiKey,
      maxRetries,
      timeoutMs,
    });
    this.agents = new Agents(transport);
  }
}
