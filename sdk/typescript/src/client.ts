/**
 * The client: `new Forgebench({ baseUrl, apiKey })` (or `tokenProvider` in place of the key), with
 * its `agents` API and the management APIs (`tenants`, `members`, `audit`, `calls`,
 * `signingKeys`, `settings`, `policies`, `issuers`).
 */

import { Agents } from "./agents.js";
import { KeyCredential, TokenCredential, type Credential, type TokenProvider } from "./auth.js";
import { Audit, Calls, Issuers, Members, Policies, Settings, SigningKeys, Tenants } from "./manage.js";
import { Transport } from "./transport.js";

/**
 * The hosted service's URL, to pass as `baseUrl` when that is the gateway you mean. The SDK
 * never uses it on its own: there is no default gateway.
 */
export const HOSTED_URL = "https://api.forgebench.ai";

/** The variable read for the gateway's URL when the options give no `baseUrl`. */
export const URL_VARIABLE = "FORGEBENCH_URL";
/** The variable read for the agent key when the options give neither `apiKey` nor `tokenProvider`. */
export const API_KEY_VARIABLE = "FORGEBENCH_API_KEY";

/** Retries of one request when `maxRetries` is not given; the same in every Forgebench SDK. */
export const DEFAULT_MAX_RETRIES = 2;
/** One attempt's timeout when `timeoutMs` is not given, on top of the request's `wait`. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ForgebenchOptions {
  /** The gateway's URL; else `FORGEBENCH_URL`. No default: without either the constructor throws. */
  baseUrl?: string;
  /**
   * The key the client sends; else `FORGEBENCH_API_KEY`. An agent key (`fb_agt_...`) to act as
   * that agent; a person's key (`fb_adm_...`, `fb_mem_...`, `fb_view_...`) to manage the tenant;
   * the operator key (`fb_op_...`) for `tenants.create` and changing `signingKeys`. Not with
   * `tokenProvider`.
   */
  apiKey?: string;
  /**
   * Sign in with OpenID Connect access tokens instead of a key: a function (may be async) that
   * returns a fresh access token of an issuer the tenant trusts, as a string (its JWT `exp` says
   * when it expires) or `{ token, expiresIn }` (seconds, a token endpoint's `expires_in`). A
   * token is kept until 60 s before it expires, then the provider is called again; one whose
   * expiry is unknown is asked for before every request. A token the gateway refuses as
   * `invalid_token` is replaced once and the request sent again. Not with `apiKey`; with a
   * provider, `FORGEBENCH_API_KEY` is not read.
   */
  tokenProvider?: TokenProvider;
  /**
   * Retries of one request (default 2): after a 429 or 503 always; after no response, a 502 or
   * a 504 only when the request is safe to repeat (docs/sdks.md).
   */
  maxRetries?: number;
  /** How long one attempt may take, on top of the `wait` it asks the gateway for. Default 30 s. */
  timeoutMs?: number;
}

export class Forgebench {
  /** Tasks (as caller and callee), cards, and managing agents: keys, bindings, endpoint, tools. */
  readonly agents: Agents;
  /** New tenants (the operator key). */
  readonly tenants: Tenants;
  /** The tenant's people and their keys (an admin key). */
  readonly members: Members;
  /** The tenant's audit log (an admin or viewer key). */
  readonly audit: Audit;
  /** The lineage of governed calls (an admin or viewer key). */
  readonly calls: Calls;
  /** The gateway's signing keys: the JWKS (any key), rotation and retirement (the operator key). */
  readonly signingKeys: SigningKeys;
  /** The tenant's settings (an admin key to change them). */
  readonly settings: Settings;
  /** The tenant's policies: read and check (an admin or viewer key), change (an admin key). */
  readonly policies: Policies;
  /** The OpenID Connect issuers the tenant trusts, and who their tokens sign in as (an admin key to change them). */
  readonly issuers: Issuers;

  /** An option always wins over its environment variable; nothing is sent while constructing. */
  constructor(options: ForgebenchOptions = {}) {
    const baseUrl = options.baseUrl ?? environment(URL_VARIABLE);
    if (typeof baseUrl !== "string" || baseUrl.length === 0) {
      throw new TypeError(
        `Forgebench needs a baseUrl (or set ${URL_VARIABLE}): the gateway to send the key to, ` +
          `e.g. baseUrl: "${HOSTED_URL}" for the hosted service`,
      );
    }
    const credential = credentialOf(options);
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new RangeError("maxRetries must be 0 or more");
    if (!(timeoutMs > 0)) throw new RangeError("timeoutMs must be more than 0");
    const transport = new Transport({ baseUrl, credential, maxRetries, timeoutMs });
    this.agents = new Agents(transport);
    this.tenants = new Tenants(transport);
    this.members = new Members(transport);
    this.audit = new Audit(transport);
    this.calls = new Calls(transport);
    this.signingKeys = new SigningKeys(transport);
    this.settings = new Settings(transport);
    this.policies = new Policies(transport);
    this.issuers = new Issuers(transport);
  }
}

/** The key, or the token provider: exactly one (the key may come from the environment). */
function credentialOf(options: ForgebenchOptions): Credential {
  if (options.tokenProvider !== undefined) {
    if (options.apiKey !== undefined) {
      throw new TypeError("Forgebench takes an apiKey or a tokenProvider, not both");
    }
    if (typeof options.tokenProvider !== "function") {
      throw new TypeError("tokenProvider must be a function that returns an access token");
    }
    return new TokenCredential(options.tokenProvider);
  }
  const apiKey = options.apiKey ?? environment(API_KEY_VARIABLE);
  if (typeof apiKey !== "string" || apiKey.length === 0) {
    throw new TypeError(`Forgebench needs an apiKey (an agent key; or set ${API_KEY_VARIABLE}) or a tokenProvider`);
  }
  return new KeyCredential(apiKey);
}

/** A variable of `process.env` where the runtime has one (Node.js, Bun); else undefined. */
export function environment(name: string): string | undefined {
  if (typeof process === "undefined" || typeof process.env !== "object" || process.env === null) return undefined;
  const value = process.env[name];
  return value === undefined || value.length === 0 ? undefined : value;
}
