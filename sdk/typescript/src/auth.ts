/**
 * What a request signs in with: a key (the same for every request), or the access tokens of an
 * OpenID Connect issuer the tenant trusts, from a token provider the application gives.
 *
 * A provider's token is kept until `REFRESH_MARGIN_SECONDS` before it expires (its `expiresIn`,
 * else the JWT's `exp` claim read without verification); one whose expiry is known neither way
 * is asked for before every request. One provider call runs at a time: requests that need a
 * token while it runs wait for its answer. A token the gateway refuses (`invalid_token`) is
 * forgotten, so the next request asks the provider again.
 *
 * No token is ever logged, put in an error message, or made enumerable on an object.
 */

/** What a token provider may answer with besides the bare token: the token and its lifetime. */
export interface AccessToken {
  /** The access token, sent as `Authorization: Bearer <token>`. */
  token: string;
  /**
   * Seconds from now until the token expires, as a token endpoint's `expires_in` says it. When
   * left out (or `null`), the JWT's `exp` claim is read instead (without verification).
   */
  expiresIn?: number | null | undefined;
}

/**
 * Returns a fresh access token for the gateway: the token itself (its JWT `exp` tells when it
 * expires) or `{ token, expiresIn }`. May be async. What it throws reaches the caller as it is.
 */
export type TokenProvider = () => string | AccessToken | Promise<string | AccessToken>;

/** A token is asked for again this long before it expires. */
export const REFRESH_MARGIN_SECONDS = 60;

/** Where the credential of a request comes from. */
export interface Credential {
  /** The credential to send with the next attempt. */
  current(): Promise<string>;
  /**
   * Told that the gateway refused `used` as an invalid token. True when a new credential may be
   * worth one more attempt (a token provider's); the refused token is forgotten.
   */
  refused(used: string): boolean;
}

/** A key: the same credential for every request; a refused key is final. */
export class KeyCredential implements Credential {
  readonly #key: string;

  constructor(key: string) {
    this.#key = key;
  }

  async current(): Promise<string> {
    return this.#key;
  }

  refused(): boolean {
    return false;
  }

  toJSON(): string {
    return "KeyCredential";
  }
}

interface Kept {
  token: string;
  /** Milliseconds on the clock after which the token is asked for again. */
  refreshAt: number;
}

/** A token provider's tokens, kept while fresh. `now` is the clock (milliseconds), for tests. */
export class TokenCredential implements Credential {
  readonly #provider: TokenProvider;
  readonly #now: () => number;
  #kept: Kept | undefined;
  #pending: Promise<string> | undefined;

  constructor(provider: TokenProvider, now: () => number = Date.now) {
    if (typeof provider !== "function") throw new TypeError("tokenProvider must be a function that returns an access token");
    this.#provider = provider;
    this.#now = now;
  }

  async current(): Promise<string> {
    const kept = this.#kept;
    if (kept !== undefined && this.#now() < kept.refreshAt) return kept.token;
    this.#kept = undefined;
    // one provider call at a time: a request that comes while it runs takes its answer
    this.#pending ??= this.#fetch().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  refused(used: string): boolean {
    if (this.#kept?.token === used) this.#kept = undefined;
    return true;
  }

  async #fetch(): Promise<string> {
    const asked = this.#now();
    const { token, expiresAtMs } = checked(await this.#provider(), asked);
    const refreshAt = expiresAtMs === undefined ? undefined : expiresAtMs - REFRESH_MARGIN_SECONDS * 1000;
    // unknown expiry, or too close to it already: used for this request only
    if (refreshAt !== undefined && refreshAt > this.#now()) this.#kept = { token, refreshAt };
    return token;
  }

  toJSON(): string {
    return "TokenCredential";
  }
}

/** The token and when it expires (clock milliseconds), from what a provider answered at `asked`. */
function checked(answer: unknown, asked: number): { token: string; expiresAtMs: number | undefined } {
  if (typeof answer === "string") {
    if (answer.length === 0) throw new TypeError("the token provider returned an empty token");
    return { token: answer, expiresAtMs: jwtExpiryMs(answer) };
  }
  if (typeof answer === "object" && answer !== null && "token" in answer) {
    const { token, expiresIn } = answer as AccessToken;
    if (typeof token !== "string" || token.length === 0) {
      throw new TypeError("the token provider returned an object whose `token` is not a non-empty string");
    }
    if (expiresIn === undefined || expiresIn === null) return { token, expiresAtMs: jwtExpiryMs(token) };
    if (typeof expiresIn !== "number" || !Number.isFinite(expiresIn)) {
      throw new TypeError("the token provider's `expiresIn` must be a number of seconds");
    }
    return { token, expiresAtMs: asked + expiresIn * 1000 };
  }
  throw new TypeError("the token provider must return a token (a string) or { token, expiresIn }");
}

/**
 * The `exp` of a JWT in clock milliseconds, read without verifying anything (the gateway does
 * that); undefined when the token is not a JWT or has no numeric `exp`.
 */
export function jwtExpiryMs(token: string): number | undefined {
  const parts = token.split(".");
  if (parts.length !== 3 || parts[1] === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(base64UrlText(parts[1]));
    if (typeof claims === "object" && claims !== null && "exp" in claims) {
      const exp = claims.exp;
      if (typeof exp === "number" && Number.isFinite(exp)) return exp * 1000;
    }
  } catch {
    // not JSON: no expiry known
  }
  return undefined;
}

/** The UTF-8 text of base64url (atob and TextDecoder: every runtime has them, Node's Buffer not). */
function base64UrlText(encoded: string): string {
  const base64 = encoded.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  return new TextDecoder().decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)));
}

/** Whether a `WWW-Authenticate` header says the bearer token was refused (RFC 6750 `invalid_token`). */
export function saysInvalidToken(header: string | null): boolean {
  return header !== null && /(^|[\s,])error\s*=\s*"?invalid_token"?/i.test(header);
}
