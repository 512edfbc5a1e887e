const task = await forgebench.agents.nextTask({ wait: 20 });
if (task) {
await forgebench.agents.reply(task.id, { state: "completed", artifacts: [] });
}
