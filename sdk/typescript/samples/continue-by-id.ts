const CALLEE_ID = "706608c0-4160-452a-86ac-ded1186326ac";

let task = await forgebench.agents.call(CALLEE_ID, { text: "Classify this invoice", wait: 30 });
if (task.status.state === "input_required") {
task = await forgebench.agents.call(CALLEE_ID, {
  text: "It's a recurring SaaS charge, category: software",
  contextId: task.context_id,
  wait: 30,
});
}
