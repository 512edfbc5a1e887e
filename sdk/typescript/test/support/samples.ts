/**
 * Runs a sample of samples/ as it is written, in a node process of its own: the TypeScript is
 * only transpiled, the docs' base URL becomes the local gateway's (and the docs' example callee
 * id the test callee's), and the keys come from the environment. The prelude
 * (sample-prelude.ts) supplies what the sample leaves to the reader's program.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import ts from "typescript";

/** The package's root (sdk/typescript), from build/test/support/. */
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const samplesDir = join(packageRoot, "samples");

/** What the docs' samples say, and the local stand-ins they are replaced by. */
export const DOCS_BASE_URL = "https://api.forgebench.ai";
export const DOCS_CALLEE_ID = "706608c0-4160-452a-86ac-ded1186326ac";

const PRELUDE = join(packageRoot, "build/test/support/sample-prelude.js");
const RUN_DIR = join(packageRoot, "build/sample-runs");

export interface SampleEnv {
  baseUrl: string;
  /** The test callee's id, in place of the docs' example id. */
  calleeId?: string;
  callerKey?: string;
  calleeKey?: string;
  taskId?: string;
}

export interface SampleOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunningSample {
  /** Resolves when the process ends. */
  done: Promise<SampleOutcome>;
  /** The output so far. */
  stdout(): string;
  /** Whether the process is still running. */
  running(): boolean;
  stop(): Promise<SampleOutcome>;
}

/** The names of the sample files (without `.ts`), the prelude's declarations left out. */
export function sampleNames(): string[] {
  return readdirSync(samplesDir)
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
    .map((file) => file.slice(0, -".ts".length))
    .sort();
}

export function sampleText(name: string): string {
  return readFileSync(join(samplesDir, `${name}.ts`), "utf8");
}

/**
 * The strict type check `test.sh` runs on samples/ (`tsc -p samples/tsconfig.json --noEmit
 * --strict`), on `files` (with the samples' prelude): every diagnostic, as text.
 */
export function typeCheck(files: readonly string[]): string[] {
  const configFile = join(samplesDir, "tsconfig.json");
  const config = ts.readConfigFile(configFile, (path) => ts.sys.readFile(path));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, samplesDir);
  const program = ts.createProgram({
    rootNames: [join(samplesDir, "prelude.d.ts"), ...files],
    options: { ...parsed.options, strict: true, noEmit: true },
  });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file === undefined ? "" : `${diagnostic.file.fileName}: `;
    return where + ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
  });
}

/** Writes `text` as a TypeScript file under build/, where the package's own name resolves. */
export function writeScratchSample(name: string, text: string): string {
  const dir = join(packageRoot, "build/type-checks");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${randomUUID()}.ts`);
  writeFileSync(file, text);
  return file;
}

export function samplePath(name: string): string {
  return join(samplesDir, `${name}.ts`);
}

/** Starts the sample; see `RunningSample`. */
export function startSample(name: string, env: SampleEnv): RunningSample {
  const file = writeRunnable(name, env);
  const child = spawn(process.execPath, ["--import", PRELUDE, file], {
    cwd: packageRoot,
    env: childEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const done = new Promise<SampleOutcome>((resolveDone, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolveDone({ code, stdout, stderr }));
  });
  return {
    done,
    stdout: () => stdout,
    running: () => child.exitCode === null && child.signalCode === null,
    stop: () => stopChild(child, done),
  };
}

/** Runs the sample to its end (killed after `timeoutMs`). */
export async function runSample(name: string, env: SampleEnv, timeoutMs = 60_000): Promise<SampleOutcome> {
  const sample = startSample(name, env);
  const timer = setTimeout(() => void sample.stop(), timeoutMs);
  try {
    return await sample.done;
  } finally {
    clearTimeout(timer);
  }
}

/** The sample as JavaScript, with the docs' URL and example id replaced, written to build/sample-runs/. */
function writeRunnable(name: string, env: SampleEnv): string {
  let source = sampleText(name).replaceAll(DOCS_BASE_URL, env.baseUrl);
  if (env.calleeId !== undefined) source = source.replaceAll(DOCS_CALLEE_ID, env.calleeId);
  const output = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    fileName: `${name}.ts`,
  });
  mkdirSync(RUN_DIR, { recursive: true });
  const file = join(RUN_DIR, `${name}-${randomUUID()}.mjs`);
  writeFileSync(file, output.outputText);
  return file;
}

/** Only what the sample needs: never the operator key or anything else of the test's own. */
function childEnv(env: SampleEnv): NodeJS.ProcessEnv {
  const values: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? "", FORGEBENCH_URL: env.baseUrl };
  if (env.callerKey !== undefined) values.CALLER_AGENT_KEY = env.callerKey;
  if (env.calleeKey !== undefined) values.CALLEE_AGENT_KEY = env.calleeKey;
  if (env.taskId !== undefined) values.TASK_ID = env.taskId;
  return values;
}

async function stopChild(child: ChildProcess, done: Promise<SampleOutcome>): Promise<SampleOutcome> {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  return done;
}
