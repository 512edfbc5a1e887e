// What the samples use and leave to the reader's own program: the client of the samples that
// start mid-program, the task id to read, and the classifier the serving sample calls.
import type { Forgebench } from "@seedlinglabs/forgebench-sdk";

declare global {
  const forgebench: Forgebench;
  const taskId: string;
  function classify(invoiceId: string, options: { parentCallId?: string }): Promise<string>;
}

export {};
