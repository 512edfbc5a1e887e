/** Pauses between retries: exponential, capped, with jitter so that many clients spread out. */

const FIRST_DELAY_MS = 500;
const JITTER = 0.25;

/**
 * The pause before retry number `retry` (0 for the first): 0.5 s, 1 s, 2 s, ... up to `capMs`
 * (8 s for a request, 30 s for the serve loop), each give or take 25 %.
 */
export function backoffDelayMs(retry: number, capMs = 8_000): number {
  const plain = Math.min(capMs, FIRST_DELAY_MS * 2 ** retry);
  const jitter = 1 + JITTER * (2 * Math.random() - 1);
  return Math.round(plain * jitter);
}

/** Resolves after `ms`; rejects with the signal's reason as soon as `signal` aborts. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
