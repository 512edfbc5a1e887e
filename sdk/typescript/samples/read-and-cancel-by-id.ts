const CALLEE_ID = "706608c0-4160-452a-86ac-ded1186326ac";

const task = await forgebench.agents.getTask(CALLEE_ID, taskId, { wait: 10 });
await forgebench.agents.cancelTask(CALLEE_ID, taskId);
