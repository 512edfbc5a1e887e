/**
 * Compile-time checks of the public types: `npm run build:test` fails if a line marked
 * `@ts-expect-error` compiles, or if one of the others does not. Nothing here runs.
 */

import type {
  AgentCard,
  Forgebench,
  Part,
  ServeHandler,
  Task,
  TaskResultIn,
  TaskSearch,
  TaskSummary,
} from "@seedlinglabs/forgebench-sdk";

export function partsAreExactlyOneKind(): Part[] {
  // @ts-expect-error a part is one of text, data or file, never two
  const twoKinds: Part = { text: "a", data: 1 };
  // @ts-expect-error a file needs its uri
  const fileWithoutUri: Part = { file: { name: "x.pdf" } };
  return [twoKinds, fileWithoutUri, { text: "a" }, { data: [1, "two", null] }, { file: { uri: "s3://b/k" } }];
}

export function aTaskReadsAsTheRestShape(task: Task): (string | null | undefined)[] {
  const invoiceId: unknown = task.input.message.parts.find((p) => p.data)?.data?.invoice_id;
  return [task.context_id, task.call_id, task.error, task.status.state, task.status.message?.message_id, String(invoiceId)];
}

export function aPullResultCannotSayWorking(): TaskResultIn {
  // @ts-expect-error only a push endpoint's immediate answer may say working
  return { state: "working" };
}

export function handlersMayReturnAnyAnswer(forgebench: Forgebench): Promise<number>[] {
  const handlers: ServeHandler[] = [
    (_task, reply) => reply.done({ text: "t", data: { n: 1 } }),
    async () => "plain text",
    () => [{ name: "a", parts: [{ text: "b" }] }],
    () => ({ category: "software" }),
    () => undefined,
    () => {
      throw new Error("fails the task");
    },
  ];
  return handlers.map((handler) => forgebench.agents.serve(handler, { maxTasks: 1, concurrency: 1, wait: 1 }));
}

export function aSearchItemHasNoHistory(task: TaskSummary, full: Task): unknown[] {
  const fromFull: TaskSummary = full;
  // @ts-expect-error a search lists tasks without their history
  const history: unknown = task.history;
  return [fromFull, history, task.status.state, task.context_id];
}

export function aSearchTakesOnlyKnownStatesAndDirections(): TaskSearch[] {
  // @ts-expect-error not a task state
  const badState: TaskSearch = { state: "done" };
  // @ts-expect-error not a direction
  const badDirection: TaskSearch = { direction: "sideways" };
  return [badState, badDirection, { state: "input_required", direction: "inbound", since: new Date(), limit: 5 }];
}

export async function pagesIterate(forgebench: Forgebench): Promise<string[]> {
  const ids: string[] = [];
  for await (const task of forgebench.agents.allTasks({ limit: 10 })) ids.push(task.id);
  const cards: AgentCard[] = [];
  for await (const card of forgebench.agents.allCards()) cards.push(card);
  const page = await forgebench.agents.cards({ limit: 5 });
  return [...ids, ...cards.map((card) => card.name), page.nextCursor ?? ""];
}
