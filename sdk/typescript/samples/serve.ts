import { Forgebench } from "@seedlinglabs/forgebench-sdk";

const forgebench = new Forgebench({
baseUrl: "https://api.forgebench.ai",
apiKey: process.env.CALLEE_AGENT_KEY!,
});

await forgebench.agents.serve(async (task, reply) => {
const invoiceId = task.input.message?.parts.find((p) => p.data)?.data?.invoice_id;
if (!invoiceId) return reply.ask("which invoice_id should I classify?");
try {
  const category = await classify(invoiceId, { parentCallId: task.call_id ?? undefined });
  return reply.done({ data: { category } });
} catch (err) {
  return reply.fail(err instanceof Error ? err.message : String(err));
}
});
