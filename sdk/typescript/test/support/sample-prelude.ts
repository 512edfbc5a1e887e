/**
 * Loaded (`node --import`) before a sample runs: defines what the samples leave to the reader's
 * own program, as samples/prelude.d.ts declares it.
 * - `forgebench`: a client with the one agent key the run was given (the callee's for the
 *   manual nextTask/reply sample, the caller's for the others that start mid-program);
 * - `taskId`: the task the read-and-cancel samples read and cancel;
 * - `classify`: the serving sample's classifier. It prints what it was asked (one JSON line), so
 *   a test can see the handler's arguments; `UNKNOWN-*` invoices throw a ClassificationError and
 *   `REJECTED-*` ones throw a plain string, like a library that throws anything would.
 */

import { Forgebench } from "@seedlinglabs/forgebench-sdk";

class ClassificationError extends Error {}

async function classify(invoiceId: string, options: { parentCallId?: string }): Promise<string> {
  console.log(JSON.stringify({ classify: invoiceId, parentCallId: options.parentCallId ?? null }));
  if (invoiceId.startsWith("UNKNOWN-")) throw new ClassificationError(`no invoice ${invoiceId} on file`);
  if (invoiceId.startsWith("REJECTED-")) throw `invoice ${invoiceId} was rejected`;
  return `category-of-${invoiceId}`;
}

function sampleClient(): Forgebench | undefined {
  const baseUrl = process.env.FORGEBENCH_URL;
  const keys = [process.env.CALLER_AGENT_KEY, process.env.CALLEE_AGENT_KEY].filter((key) => key !== undefined);
  if (baseUrl === undefined || keys.length !== 1) return undefined;
  return new Forgebench({ baseUrl, apiKey: keys[0] as string });
}

Object.assign(globalThis, { forgebench: sampleClient(), taskId: process.env.TASK_ID, classify });
