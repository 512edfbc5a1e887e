const task = await forgebench.agents.getTask("invoice-classifier", taskId, { wait: 10 });
await forgebench.agents.cancelTask("invoice-classifier", taskId);
