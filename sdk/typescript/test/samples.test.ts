/**
 * The docs' TypeScript samples, kept verbatim in samples/, run as written against the gateway
 * (support/samples.ts says what is substituted). The other side of each exchange is plain fetch.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, describe, test } from "node:test";

import * as sdk from "@seedlinglabs/forgebench-sdk";
import { messageText, type Task } from "@seedlinglabs/forgebench-sdk";

import {
  CALLEE_NAME,
  answerTask,
  baseUrl,
  claimExpected,
  claimTask,
  newWorld,
  noGateway,
  openTask,
  questionResult,
  readTask,
  textResult,
  type World,
} from "./support/gateway.js";
import { startRecordingProxy } from "./support/proxies.js";
import {
  packageRoot,
  runSample,
  sampleNames,
  samplePath,
  sampleText,
  startSample,
  typeCheck,
  writeScratchSample,
  type RunningSample,
  type SampleOutcome,
} from "./support/samples.js";
import { eventually } from "./support/util.js";

/** Every TypeScript sample of the docs that uses the SDK. */
const EXPECTED_SAMPLES = [
  "call-by-id",
  "call-by-name",
  "continue-by-id",
  "continue-by-name",
  "next-task-and-reply",
  "read-and-cancel-by-id",
  "read-and-cancel-by-name",
  "serve",
];

/** Where the docs (seed pages) may be: ../shared/seeds from the repo root (CI's layout), or /work/shared/seeds. */
const SEEDS_CANDIDATES = [...new Set([resolve(packageRoot, "../../../shared/seeds"), "/work/shared/seeds"])];

/** The docs' directory, where this checkout has them. */
function seedsDir(): string | undefined {
  return SEEDS_CANDIDATES.find((dir) => existsSync(dir));
}

/** Whether this is a CI run: `CI` set (as CI services set it), and not to `false` or `0`. */
function inCI(): boolean {
  return !["", "0", "false", "no"].includes((process.env.CI ?? "").trim().toLowerCase());
}

const seeds = seedsDir();

/**
 * The skip of the tests that compare the samples with the docs: a developer's checkout without
 * the docs skips them, but a CI run does not (they fail in `docsPages`), so that a green CI run
 * always means the samples were compared with the docs.
 */
const withoutDocs: string | false =
  seeds === undefined && !inCI() && `the seed pages are not here (looked in ${SEEDS_CANDIDATES.join(", ")})`;

/** The text of each seed page. */
function docsPages(): string[] {
  if (seeds === undefined) {
    assert.fail(
      `the seed pages are in none of ${SEEDS_CANDIDATES.join(", ")}; ` +
        "CI is set, so the samples must be compared with the docs",
    );
  }
  const dir = seeds;
  return readdirSync(dir)
    .filter((file) => file.endsWith(".txt"))
    .sort()
    .map((file) => readFileSync(join(dir, file), "utf8"));
}

/** The SDK's error classes, as `instanceof` checks name them. */
const SDK_ERRORS = Object.keys(sdk).filter((name) => name.endsWith("Error"));

/**
 * How a line of the docs uses the TypeScript SDK: an import of the package, a client made with
 * `new Forgebench(`, a call through the docs' client (`forgebench.agents.`), the text helpers, the
 * serve handler's reply builder, or an `instanceof` check of one of the SDK's errors. (The Python
 * samples use `client.agents.` and `task.done(...)`, so none of these match a Python line.)
 */
const SDK_LINE_PATTERNS = [
  /\bfrom\s+["']@seedlinglabs\/forgebench-sdk["']/,
  /\bnew Forgebench\(/,
  /\bforgebench\.agents\./,
  /\b(?:artifactText|messageText)\(/,
  /\breply\.(?:done|ask|fail)\(/,
  new RegExp(`\\binstanceof (?:${SDK_ERRORS.join("|")})\\b`),
];

function usesTheSdk(line: string): boolean {
  return SDK_LINE_PATTERNS.some((pattern) => pattern.test(line));
}

describe("the samples are the docs' own", () => {
  test("samples/ holds each of the docs' TypeScript samples", () => {
    assert.deepEqual(sampleNames(), EXPECTED_SAMPLES);
  });

  test("the README shows each sample verbatim", () => {
    const readme = readFileSync(join(packageRoot, "README.md"), "utf8");
    for (const name of sampleNames()) {
      const text = sampleText(name).replace(/\n$/, "");
      assert.ok(readme.includes("```ts\n" + text + "\n```"), `README.md does not show samples/${name}.ts`);
    }
  });

  test("each sample appears verbatim in the docs", { skip: withoutDocs }, () => {
    const pages = docsPages();
    for (const name of sampleNames()) {
      const text = sampleText(name).replace(/\n$/, "");
      assert.ok(pages.some((page) => page.includes(text)), `samples/${name}.ts is not verbatim in the docs`);
    }
  });

  test("every line of the docs that uses the TypeScript SDK is in a sample", { skip: withoutDocs }, () => {
    const sdkLines = new Set(docsPages().flatMap((page) => page.split("\n").filter(usesTheSdk)));
    assert.ok(sdkLines.size > 0, "the docs no longer show the TypeScript SDK");
    const sampleLines = new Set(sampleNames().flatMap((name) => sampleText(name).split("\n")));
    const missing = [...sdkLines].filter((line) => !sampleLines.has(line)).sort();
    assert.deepEqual(missing, [], "lines of the docs that use the SDK and are in no sample of samples/");
  });

  test("the SDK lines are told apart from the Python SDK's", () => {
    assert.ok(SDK_ERRORS.includes("PermissionDeniedError"), SDK_ERRORS.join(", "));
    for (const line of [
      'import { Forgebench, PermissionDeniedError } from "@seedlinglabs/forgebench-sdk";',
      "const forgebench = new Forgebench({",
      'await forgebench.agents.cancelTask("invoice-classifier", taskId);',
      "console.log(artifactText(task));",
      'if (!invoiceId) return reply.ask("which invoice_id should I classify?");',
      "if (e instanceof PermissionDeniedError) {",
    ]) {
      assert.ok(usesTheSdk(line), line);
    }
    for (const line of [
      "from forgebench import Forgebench, PermissionDeniedError",
      'client = Forgebench(api_key=os.environ["CALLER_AGENT_KEY"],',
      'task = client.agents.call("invoice-classifier", text="Classify this invoice", wait=30)',
      'return task.ask("which invoice_id should I classify?")',
      "client.agents.reply(task.id, reply)",
      "const message = err instanceof Error ? err.message : String(err);",
      'curl -X POST "https://api.forgebench.ai/v1/agents/$CALLEE_ID/tasks?wait=30" \\',
    ]) {
      assert.ok(!usesTheSdk(line), line);
    }
  });
});

describe("the samples type-check under strict against the package's own declarations", () => {
  test("every sample compiles with tsc --strict", () => {
    assert.deepEqual(typeCheck(sampleNames().map(samplePath)), []);
  });

  test("the check refuses a sample that misuses the SDK", () => {
    const misused = sampleText("call-by-name").replace("artifactText(task)", "artifactText(task.id)");
    assert.notEqual(misused, sampleText("call-by-name"));
    const diagnostics = typeCheck([writeScratchSample("call-by-name-misused", misused)]);
    assert.equal(diagnostics.length, 1, diagnostics.join("\n"));
    assert.match(diagnostics[0] ?? "", /Argument of type 'string' is not assignable/);
  });

  test("the check refuses a sample that reads past what the Task type has", () => {
    const misused = sampleText("serve").replace("task.call_id ?? undefined", "task.callId");
    const diagnostics = typeCheck([writeScratchSample("serve-misused", misused)]);
    assert.ok(diagnostics.some((text) => text.includes("Property 'callId' does not exist")), diagnostics.join("\n"));
  });
});

/** How long a sample run as a new Node.js process may take to open its task on a busy machine. */
const SAMPLE_START_SECONDS = 45;

const running: RunningSample[] = [];
after(() => Promise.all(running.map((sample) => sample.stop())));

function callerEnv(world: World, extra: { calleeId?: string; taskId?: string } = {}) {
  return { baseUrl: baseUrl(), callerKey: world.callerKey, ...extra };
}

describe("the docs' samples, run as written against the gateway", { skip: noGateway, concurrency: true }, () => {
  describe("the serving samples, run as written", { concurrency: true }, () => {
    test("serve: the page's handler completes, asks, fails, and the loop survives what classify throws", async () => {
      const world = await newWorld();
      const sample = startSample("serve", { baseUrl: baseUrl(), calleeKey: world.calleeKey });
      running.push(sample);
      const open = (parts: unknown[]): Promise<Task> => openTask(world, parts, 20);
      const invoice = `INV-${randomUUID()}`;

      const completed = await open([{ text: "Classify this invoice" }, { data: { invoice_id: invoice } }]);
      assert.equal(completed.status.state, "completed");
      assert.deepEqual(completed.artifacts, [{ name: "response", parts: [{ data: { category: `category-of-${invoice}` } }] }]);
      await eventually(() => sample.stdout().includes(invoice));
      assert.deepEqual(classifyCalls(sample).find((call) => call.classify === invoice)?.parentCallId, completed.call_id);

      const asked = await open([{ text: "Classify this invoice" }]);
      assert.equal(asked.status.state, "input_required");
      assert.equal(messageText(asked.status.message), "which invoice_id should I classify?");

      const unknown = `UNKNOWN-${randomUUID()}`;
      const failed = await open([{ data: { invoice_id: unknown } }]);
      assert.equal(failed.status.state, "failed");
      assert.equal(failed.error, `no invoice ${unknown} on file`);

      const rejected = `REJECTED-${randomUUID()}`;
      const failedWithString = await open([{ data: { invoice_id: rejected } }]);
      assert.equal(failedWithString.error, `invoice ${rejected} was rejected`);

      const afterThrows = `INV-${randomUUID()}`;
      const stillServing = await open([{ data: { invoice_id: afterThrows } }]);
      assert.deepEqual(stillServing.artifacts[0]?.parts, [{ data: { category: `category-of-${afterThrows}` } }]);
      assert.ok(sample.running(), "serve is still running");
    });

    test("nextTask and reply: the claimed task is completed with no artifacts", async () => {
      const world = await newWorld();
      const opened = await openTask(world, [{ text: "Classify this invoice" }]);
      const outcome = await runSample("next-task-and-reply", { baseUrl: baseUrl(), calleeKey: world.calleeKey });
      assert.equal(outcome.code, 0, outcome.stderr);
      const task = await readTask(world, opened.id);
      assert.equal(task.status.state, "completed");
      assert.deepEqual(task.artifacts, []);
    });
  });

  for (const [sample, byId] of [
    ["call-by-name", false],
    ["call-by-id", true],
  ] as const) {
    describe(`${sample}, run as written`, { concurrency: true }, () => {
      function start(world: World): Promise<SampleOutcome> {
        return runSample(sample, callerEnv(world, byId ? { calleeId: world.calleeId } : {}));
      }

      async function theSamplesTask(world: World): Promise<Task> {
        const task = await claimExpected(world, SAMPLE_START_SECONDS);
        assert.deepEqual(task.input.message.parts, [
          { text: "Classify this invoice" },
          { data: { invoice_id: "INV-2026-0912" } },
        ]);
        return task;
      }

      test("completed: prints the artifacts' text", async () => {
        const world = await newWorld();
        const run = start(world);
        const answer = `category: software (${randomUUID()})`;
        await answerTask(world, (await theSamplesTask(world)).id, textResult(answer));
        const outcome = await run;
        assert.equal(outcome.code, 0, outcome.stderr);
        assert.equal(outcome.stdout, `${answer}\n`);
      });

      test("input_required: prints the question", async () => {
        const world = await newWorld();
        const run = start(world);
        const question = `Which cost center? (${randomUUID()})`;
        await answerTask(world, (await theSamplesTask(world)).id, questionResult(question));
        const outcome = await run;
        assert.equal(outcome.code, 0, outcome.stderr);
        assert.equal(outcome.stdout, `${question}\n`);
      });

      test("failed: prints the error", async () => {
        const world = await newWorld();
        const run = start(world);
        const error = `the ledger is closed (${randomUUID()})`;
        await answerTask(world, (await theSamplesTask(world)).id, { state: "failed", error });
        const outcome = await run;
        assert.equal(outcome.code, 0, outcome.stderr);
        assert.equal(outcome.stdout, `${error}\n`);
      });

      test("still working after its 30 s wait: polls the task with getTask", async () => {
        const world = await newWorld();
        const proxy = await startRecordingProxy(baseUrl());
        try {
          // The sample waits out its open's 30 s, then polls: on a loaded machine its start alone
          // took over 20 s of the default 60 s, and it was killed before it could exit.
          const run = runSample(sample, { ...callerEnv(world, byId ? { calleeId: world.calleeId } : {}), baseUrl: proxy.url }, 120_000);
          const claimed = await theSamplesTask(world);
          const callee = byId ? world.calleeId : CALLEE_NAME;
          const pollPath = `/v1/agents/${callee}/tasks/${claimed.id}?wait=20`;
          await proxy.requestArrives((method, url) => method === "GET" && url === pollPath);
          await answerTask(world, claimed.id, textResult("answered while polled"));
          const outcome = await run;
          assert.equal(outcome.code, 0, outcome.stderr);
          assert.equal(outcome.stdout, "", "the sample prints nothing in that branch");
          const exchanges = proxy.exchanges().map((exchange) => ({
            request: `${exchange.method} ${exchange.url}`,
            state: (exchange.responseBody as Task).status.state,
          }));
          // The open, answered working, then the poll. On a loaded machine the open's answer can
          // come after the SDK's time for it (its 30 s wait and 30 s more), and the SDK sends the
          // open again: the same message, so the same task, answered working again.
          const open = { request: `POST /v1/agents/${callee}/tasks?wait=30`, state: "working" };
          const opens = exchanges.slice(0, -1);
          assert.ok(opens.length >= 1, JSON.stringify(exchanges));
          for (const sent of opens) assert.deepEqual(sent, open);
          assert.deepEqual(exchanges.at(-1), { request: `GET ${pollPath}`, state: "completed" });
        } finally {
          await proxy.close();
        }
      });

      test("no binding: PermissionDeniedError is logged and rethrown", async () => {
        const world = await newWorld({ bound: false });
        const outcome = await start(world);
        assert.notEqual(outcome.code, 0);
        assert.equal(outcome.stdout, "");
        const logged = byId ? `not permitted to call ${world.calleeId}\n` : "not permitted to call invoice-classifier\n";
        assert.ok(outcome.stderr.startsWith(logged), outcome.stderr);
        assert.match(outcome.stderr, /PermissionDeniedError: 403: not_permitted: not permitted to call that agent/);
        assert.equal(await claimTask(world, 0), null, "no task was opened");
      });
    });
  }

  for (const [sample, byId] of [
    ["continue-by-name", false],
    ["continue-by-id", true],
  ] as const) {
    describe(`${sample}, run as written`, { concurrency: true }, () => {
      test("answers the callee's question with a new task in the same conversation", async () => {
        const world = await newWorld();
        const run = runSample(sample, callerEnv(world, byId ? { calleeId: world.calleeId } : {}));
        const first = await claimExpected(world, SAMPLE_START_SECONDS);
        assert.deepEqual(first.input.message.parts, [{ text: "Classify this invoice" }]);
        await answerTask(world, first.id, questionResult("What kind of charge is it?"));
        const second = await claimExpected(world, SAMPLE_START_SECONDS);
        assert.notEqual(second.id, first.id);
        assert.equal(second.context_id, first.context_id);
        assert.deepEqual(second.input.message.parts, [{ text: "It's a recurring SaaS charge, category: software" }]);
        await answerTask(world, second.id, textResult("software"));
        const outcome = await run;
        assert.equal(outcome.code, 0, outcome.stderr);
        assert.equal((await readTask(world, first.id)).status.state, "input_required");
      });

      test("opens no second task when the first is answered", async () => {
        const world = await newWorld();
        const run = runSample(sample, callerEnv(world, byId ? { calleeId: world.calleeId } : {}));
        await answerTask(world, (await claimExpected(world, SAMPLE_START_SECONDS)).id, textResult("software"));
        const outcome = await run;
        assert.equal(outcome.code, 0, outcome.stderr);
        assert.equal(await claimTask(world, 0), null);
      });
    });
  }

  for (const [sample, byId] of [
    ["read-and-cancel-by-name", false],
    ["read-and-cancel-by-id", true],
  ] as const) {
    describe(`${sample}, run as written`, { concurrency: true }, () => {
      function runOn(world: World, taskId: string): Promise<SampleOutcome> {
        return runSample(sample, callerEnv(world, { taskId, ...(byId ? { calleeId: world.calleeId } : {}) }));
      }

      test("reads the task and cancels it", async () => {
        const world = await newWorld();
        const opened = await openTask(world, [{ text: "Classify this invoice" }]);
        // A question takes the task out of working, so the sample's 10 s read answers at once.
        await answerTask(world, (await claimExpected(world, 5)).id, questionResult("Which one?"));
        const outcome = await runOn(world, opened.id);
        assert.equal(outcome.code, 0, outcome.stderr);
        assert.equal((await readTask(world, opened.id)).status.state, "canceled");
      });

      test("canceling a finished task is not an error", async () => {
        const world = await newWorld();
        const opened = await openTask(world, [{ text: "Classify this invoice" }]);
        await answerTask(world, (await claimExpected(world, 5)).id, textResult("software"));
        const outcome = await runOn(world, opened.id);
        assert.equal(outcome.code, 0, outcome.stderr);
        assert.equal((await readTask(world, opened.id)).status.state, "completed");
      });

      test("an unknown task is not found", async () => {
        const world = await newWorld();
        const outcome = await runOn(world, randomUUID());
        assert.notEqual(outcome.code, 0);
        assert.match(outcome.stderr, /NotFoundError: 404: task not found/);
      });
    });
  }
});

interface ClassifyCall {
  classify: string;
  parentCallId: string | null;
}

/** The calls the prelude's classify printed. */
function classifyCalls(sample: RunningSample): ClassifyCall[] {
  return sample
    .stdout()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as ClassifyCall);
}
