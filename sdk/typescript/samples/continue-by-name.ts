let task = await forgebench.agents.call("invoice-classifier", { text: "Classify this invoice", wait: 30 });
if (task.status.state === "input_required") {
task = await forgebench.agents.call("invoice-classifier", {
  text: "It's a recurring SaaS charge, category: software",
  contextId: task.context_id,
  wait: 30,
});
}
