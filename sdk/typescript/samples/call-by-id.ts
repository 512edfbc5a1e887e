import { Forgebench, PermissionDeniedError, artifactText, messageText } from "@seedlinglabs/forgebench-sdk";

const forgebench = new Forgebench({
baseUrl: "https://api.forgebench.ai",
apiKey: process.env.CALLER_AGENT_KEY!,
});

const CALLEE_ID = "706608c0-4160-452a-86ac-ded1186326ac";

let task;
try {
task = await forgebench.agents.call(CALLEE_ID, {
  text: "Classify this invoice",
  data: { invoice_id: "INV-2026-0912" },
  wait: 30,
});
} catch (e) {
if (e instanceof PermissionDeniedError) {
  // no binding yet, still pending the callee's approval, or revoked —
  // see /docs/a2a#1-grant-a-binding and /docs/a2a/cards#errors-specific-to-a2a
  console.error("not permitted to call", CALLEE_ID);
}
throw e;
}

if (task.status.state === "completed") {
console.log(artifactText(task));
} else if (task.status.state === "input_required") {
console.log(messageText(task.status.message));
} else if (task.status.state === "failed") {
console.log(task.error);
} else {
const polled = await forgebench.agents.getTask(CALLEE_ID, task.id, { wait: 20 });
}
