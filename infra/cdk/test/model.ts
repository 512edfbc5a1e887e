// Reads the SAM template (infra/template.yaml with its AWS::Include of openapi.yaml) and the
// synthesized CDK template into one comparable model: every reference is rewritten to the name
// of what it points at (the SAM logical id, or the CDK construct path below the gateway joined:
// `Gateway/CancelTask/Function/Resource` -> `CancelTaskFunction`), so the two sides line up.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as yaml from 'js-yaml';

/* eslint-disable @typescript-eslint/no-explicit-any */
export type Json = any;

// CloudFormation's short-form tags, read as their long forms.
const tag = (name: string, kind: 'scalar' | 'sequence' | 'mapping', long: string, split = false) =>
  new yaml.Type(`!${name}`, {
    kind,
    construct: (data: Json) => ({ [long]: split && typeof data === 'string' ? splitGetAtt(data) : data }),
  });
function splitGetAtt(s: string): string[] {
  const dot = s.indexOf('.');
  return [s.slice(0, dot), s.slice(dot + 1)];
}
const FUNCTIONS_TAGS: [string, string][] = [
  ['Ref', 'Ref'], ['Sub', 'Fn::Sub'], ['GetAtt', 'Fn::GetAtt'], ['Join', 'Fn::Join'], ['If', 'Fn::If'],
  ['Equals', 'Fn::Equals'], ['Select', 'Fn::Select'], ['Split', 'Fn::Split'], ['FindInMap', 'Fn::FindInMap'],
  ['Base64', 'Fn::Base64'], ['Cidr', 'Fn::Cidr'], ['ImportValue', 'Fn::ImportValue'], ['GetAZs', 'Fn::GetAZs'],
  ['And', 'Fn::And'], ['Or', 'Fn::Or'], ['Not', 'Fn::Not'], ['Condition', 'Condition'],
];
export const CFN_SCHEMA = yaml.DEFAULT_SCHEMA.extend(
  FUNCTIONS_TAGS.flatMap(([short, long]) =>
    (['scalar', 'sequence', 'mapping'] as const).map((kind) => tag(short, kind, long, short === 'GetAtt')),
  ),
);

/** Rewrites intrinsics into strings naming their targets: `{{ref:Table}}`, `{{Table.Arn}}`. */
export function canon(v: Json, name: (logicalId: string) => string): Json {
  if (Array.isArray(v)) return v.map((x) => canon(x, name));
  if (v === null || typeof v !== 'object') return v;
  const keys = Object.keys(v);
  if (keys.length === 1) {
    const [k] = keys as [string];
    const a = v[k];
    if (k === 'Ref') return typeof a === 'string' && a.startsWith('AWS::') ? `\${${a}}` : `{{ref:${name(a)}}}`;
    if (k === 'Fn::GetAtt') return `{{${name(a[0])}.${a[1]}}}`;
    if (k === 'Fn::If' && Array.isArray(a)) return { 'Fn::If': [name(a[0]), canon(a[1], name), canon(a[2], name)] };
    if (k === 'Fn::Join') {
      const parts = canon(a[1], name);
      if (Array.isArray(parts) && parts.every((p) => typeof p === 'string')) return parts.join(a[0]);
    }
    if (k === 'Fn::Sub') {
      const [template, vars] = typeof a === 'string' ? [a, {}] : [a[0] as string, a[1] ?? {}];
      return template.replace(/\$\{([^}]+)\}/g, (_m: string, ref: string) => {
        if (ref in vars) return String(canon(vars[ref], name));
        if (ref.startsWith('AWS::')) return `\${${ref}}`;
        if (ref.includes('.')) {
          const [id, att] = splitGetAtt(ref) as [string, string];
          return `{{${name(id)}.${att}}}`;
        }
        return `{{ref:${name(ref)}}}`;
      });
    }
  }
  const out: Json = {};
  for (const k of keys.sort()) out[k] = canon(v[k], name);
  return out;
}

export interface FunctionModel {
  /** The `FORGEBENCH_ROUTE` the function sets: what the gateway binary serves in it. */
  route: Json;
  /** The cargo binary SAM builds for it (`Metadata.BuildProperties.Binary`); the SAM side only. */
  binary?: Json;
  settings: Record<string, Json>;
  env: Record<string, Json>;
  /** `Allow <action> on <resource> [if <condition>]`, one per action and resource. */
  permissions: string[];
  managedPolicies: string[];
  triggers: string[];
}

export interface Model {
  parameters: Record<string, Json>;
  functions: Record<string, FunctionModel>;
  /** `METHOD /path -> integration` for every operation of the API definition. */
  routes: string[];
  /** The API definition without its integrations' function names (compared whole). */
  definition: Json;
  /** The REST API (its definition aside, with its DependsOn) and its stage, as deployed. */
  stage: Json;
  conditions: Record<string, Json>;
  invokePermissions: string[];
  logGroups: string[];
  /** Every resource but functions, the API, log groups and permissions, by name. */
  resources: Record<string, Json>;
  outputs: Record<string, Json>;
}

/** The cargo binary (functions/gateway) every SAM function builds and runs. */
const GATEWAY_BINARY = 'gateway';

const PARAMETER_FIELDS = ['Type', 'Default', 'AllowedValues', 'AllowedPattern', 'MinValue', 'MaxValue', 'NoEcho'];
const SAM_FUNCTION_PROPERTIES = new Set([
  'Runtime', 'Handler', 'MemorySize', 'Timeout', 'Architectures', 'ReservedConcurrentExecutions', 'LoggingConfig', 'Description',
  'Tracing', 'Environment', 'Policies', 'Events', 'CodeUri', 'Layers',
]);
const FUNCTION_FIELDS = ['TracingConfig', 'Runtime', 'Handler', 'MemorySize', 'Timeout', 'Architectures', 'ReservedConcurrentExecutions', 'LoggingConfig', 'Description', 'Layers'];

function parameters(params: Json): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [k, p] of Object.entries<Json>(params ?? {})) {
    if (k === 'BootstrapVersion') continue; // the CDK bootstrap's, not the gateway's
    out[k] = Object.fromEntries(PARAMETER_FIELDS.filter((f) => p[f] !== undefined).map((f) => [f, String(p[f])]));
  }
  return out;
}

function permissionsOf(statements: Json[], name: (id: string) => string): string[] {
  const out: string[] = [];
  for (const s of statements) {
    const actions: string[] = [].concat(s.Action);
    const resources: Json[] = [].concat(s.Resource);
    const condition = s.Condition ? ` if ${JSON.stringify(sortArrays(canon(s.Condition, name)))}` : '';
    for (const a of actions) for (const r of resources) out.push(`${s.Effect} ${a} on ${canon(r, name)}${condition}`);
  }
  return out.sort();
}

function sortArrays(v: Json): Json {
  if (Array.isArray(v)) return v.map(sortArrays).sort();
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, sortArrays(x)]));
  return v;
}

function routesOf(definition: Json, name: (id: string) => string): { routes: string[]; rest: Json } {
  const routes: string[] = [];
  const rest = JSON.parse(JSON.stringify(definition));
  for (const [p, ops] of Object.entries<Json>(definition.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(ops)) {
      const i = op?.['x-amazon-apigateway-integration'];
      if (!i) continue;
      const c = canon(i, name);
      routes.push(
        `${method.toUpperCase()} ${p} -> ${c.type} ${c.httpMethod} ${c.uri} transfer=${c.responseTransferMode ?? 'BUFFERED'} timeout=${c.timeoutInMillis ?? 'default'} passthrough=${c.passthroughBehavior}`,
      );
      delete rest.paths[p][method]['x-amazon-apigateway-integration'];
    }
  }
  return { routes: routes.sort(), rest };
}

export type Partition = 'aws' | 'aws-cn' | 'aws-us-gov';
/** A region of each partition, for SAM's transform (which decides names by the partition it runs in). */
const PARTITION_REGION: Record<Partition, string> = { aws: 'us-east-1', 'aws-cn': 'cn-north-1', 'aws-us-gov': 'us-gov-west-1' };

/**
 * The SAM template after SAM's own transform (aws-sam-translator, offline: test/sam-translate.py),
 * as CloudFormation gets it in a region of `partition`. The Python with samtranslator is
 * FORGEBENCH_SAM_PYTHON, or the project's .local/venv (scripts/install.sh with
 * `deploy` installs aws-sam-cli, which brings it).
 */
export function samTransformed(templatePath: string, partition: Partition = 'aws'): Json {
  const root = path.resolve(__dirname, '..', '..', '..', '..');
  const script = path.join(root, 'infra', 'cdk', 'test', 'sam-translate.py');
  const python = process.env.FORGEBENCH_SAM_PYTHON ?? path.join(root, '.local', 'venv', 'bin', 'python');
  if (!fs.existsSync(python)) {
    throw new Error(`${python} is missing: the drift test runs SAM's transform (aws-sam-translator); run scripts/install.sh deploy or set FORGEBENCH_SAM_PYTHON`);
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    AWS_DEFAULT_REGION: PARTITION_REGION[partition],
    AWS_REGION: PARTITION_REGION[partition],
    // Only the region is read: no profile, no credentials, no instance metadata.
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  const run = spawnSync(python, [script, templatePath], { env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (run.status !== 0) throw new Error(`SAM's transform of ${templatePath} failed (${python} ${script}):\n${run.stderr}`);
  return JSON.parse(run.stdout);
}

/** Managed policy ARNs name their partition as the CDK stack does (`arn:${AWS::Partition}:`). */
const managedArn = (arn: Json): Json => (typeof arn === 'string' ? arn.replace(/^arn:aws(-cn|-us-gov)?:/, 'arn:${AWS::Partition}:') : arn);

/** The REST API (without its definition) and its stage, from a CloudFormation template. */
function apiAndStage(t: Json, name: (id: string) => string): Json {
  const entries = Object.entries<Json>(t.Resources);
  const apis = entries.filter(([, r]) => r.Type === 'AWS::ApiGateway::RestApi');
  const stages = entries.filter(([, r]) => r.Type === 'AWS::ApiGateway::Stage');
  if (apis.length !== 1 || stages.length !== 1) throw new Error(`${apis.length} REST APIs and ${stages.length} stages, not one each`);
  const [, api] = apis[0]!;
  const [, stage] = stages[0]!;
  const { Body: _body, BodyS3Location: _location, ...restApi } = api.Properties;
  const { DeploymentId: _deployment, RestApiId: _api, ...stageProperties } = stage.Properties;
  stageProperties.MethodSettings = (stageProperties.MethodSettings ?? []).map((m: Json) => {
    const { DataTraceEnabled, ...rest } = m;
    if (DataTraceEnabled) throw new Error('data trace is on');
    return rest;
  });
  return canon({ RestApi: restApi, RestApiDependsOn: dependsOn(api.DependsOn, name), Stage: stageProperties, StageDependsOn: dependsOn(stage.DependsOn, name) }, name);
}

function dependsOn(d: Json, name: (id: string) => string): string[] | undefined {
  return d === undefined ? undefined : [].concat(d).map((x: string) => name(x)).sort();
}

/** The SAM template, as CloudFormation would see it after SAM's transform, for what we compare. */
export function samModel(templatePath: string, partition: Partition = 'aws'): Model {
  const t = yaml.load(fs.readFileSync(templatePath, 'utf8'), { schema: CFN_SCHEMA }) as Json;
  const transformed = samTransformed(templatePath, partition);
  const name = (id: string) => id;
  const globals = t.Globals?.Function ?? {};
  const functions: Record<string, FunctionModel> = {};
  const logGroups: string[] = [];
  const invokePermissions: string[] = [];
  let definition: Json;
  let stage: Json;
  for (const [id, r] of Object.entries<Json>(t.Resources)) {
    const p = r.Properties ?? {};
    if (r.Type === 'AWS::Serverless::Function') {
      const merged = { ...globals, ...p };
      const unmodelled = Object.keys(merged).filter((k) => !SAM_FUNCTION_PROPERTIES.has(k));
      if (unmodelled.length > 0) throw new Error(`${id}: ${unmodelled.join(', ')} not compared by the drift test yet (test/model.ts)`);
      if (merged.Tracing !== undefined) merged.TracingConfig = { Mode: merged.Tracing };
      const settings: Record<string, Json> = {};
      for (const f of FUNCTION_FIELDS) if (merged[f] !== undefined) settings[f] = canon(merged[f], name);
      if (typeof settings.Description === 'string') settings.Description = settings.Description.trim();
      const env = canon({ ...(globals.Environment?.Variables ?? {}), ...(p.Environment?.Variables ?? {}) }, name);
      for (const doc of p.Policies ?? []) {
        if (typeof doc === 'string' || !doc.Statement) throw new Error(`${id}: only inline policy documents are modelled`);
      }
      // The role as SAM makes it: the inline policies, and the managed policies it adds (basic
      // execution; X-Ray write for Tracing: Active; SQS execution for an SQS event).
      const roleId = transformed.Resources[id]?.Properties?.Role?.['Fn::GetAtt']?.[0];
      const role = transformed.Resources[roleId];
      if (!role) throw new Error(`${id}: no role in SAM's transform`);
      const statements = (role.Properties.Policies ?? []).flatMap((x: Json) => x.PolicyDocument.Statement);
      const managedPolicies: string[] = (role.Properties.ManagedPolicyArns ?? []).map((m: Json) => managedArn(canon(m, name)));
      const triggers: string[] = [];
      for (const e of Object.values<Json>(p.Events ?? {})) {
        if (e.Type === 'Schedule') triggers.push(`schedule ${e.Properties.Schedule}`);
        else if (e.Type === 'SQS') {
          triggers.push(`sqs ${canon(e.Properties.Queue, name)} batch=${e.Properties.BatchSize} ${[].concat(e.Properties.FunctionResponseTypes ?? []).join(',')}`);
        } else throw new Error(`${id}: event type ${e.Type} is not modelled`);
      }
      // Every function runs the one gateway binary: named by the route it serves.
      functions[`${id} (${env.FORGEBENCH_ROUTE})`] = {
        route: env.FORGEBENCH_ROUTE,
        binary: r.Metadata?.BuildProperties?.Binary,
        settings,
        env,
        permissions: permissionsOf(statements, name),
        managedPolicies: managedPolicies.sort(),
        triggers,
      };
    } else if (r.Type === 'AWS::Serverless::Api') {
      // Every other property of the Api reaches the REST API or the stage SAM makes of it, which
      // are compared whole (apiAndStage, from SAM's transform).
      const include = p.DefinitionBody?.['Fn::Transform'];
      if (include?.Name !== 'AWS::Include') throw new Error('the Api must include its definition');
      const location = path.resolve(path.dirname(templatePath), include.Parameters.Location);
      definition = yaml.load(fs.readFileSync(location, 'utf8'));
      stage = apiAndStage(transformed, name);
    } else if (r.Type === 'AWS::Logs::LogGroup') {
      logGroups.push(JSON.stringify(canon(p, name)));
    } else if (r.Type === 'AWS::Lambda::Permission' && p.Principal === 'apigateway.amazonaws.com') {
      invokePermissions.push(JSON.stringify(canon(p, name)));
    }
  }
  const { routes, rest } = routesOf(definition, name);
  return {
    parameters: parameters(t.Parameters),
    functions,
    routes,
    definition: rest,
    stage,
    conditions: canon(t.Conditions ?? {}, name),
    invokePermissions: invokePermissions.sort(),
    logGroups: logGroups.sort(),
    resources: others(t.Resources, name, true),
    outputs: outputs(t.Outputs, name),
  };
}

const SAM_MODELLED = new Set(['AWS::Serverless::Function', 'AWS::Serverless::Api', 'AWS::Logs::LogGroup', 'AWS::Lambda::Permission']);
/** What the CDK stack makes of its own (SAM's transform makes the same from its shorthand; compared above). */
const CDK_EXTRAS = new Set([
  'AWS::Lambda::Function', 'AWS::Lambda::EventSourceMapping', 'AWS::Events::Rule',
  'AWS::ApiGateway::RestApi', 'AWS::ApiGateway::Deployment', 'AWS::ApiGateway::Stage', 'AWS::CDK::Metadata',
]);

function outputs(o: Json, name: (id: string) => string): Record<string, Json> {
  return Object.fromEntries(Object.keys(o ?? {}).sort().map((k) => [k, canon(o[k].Value, name)]));
}

/**
 * A deletion policy as CloudFormation applies it: `Delete`, written out (CDK's L2 constructs write
 * it for a stateful resource that is deleted with its stack), is the default of every resource
 * type but RDS's, the same as none.
 */
function deletion(type: string, policy: Json): Json {
  return policy === 'Delete' && !type.startsWith('AWS::RDS::') ? undefined : policy;
}

/** Every other resource, by name: type, properties, metadata, deletion policies, condition, dependencies. */
function others(resources: Json, name: (id: string) => string, sam: boolean): Record<string, Json> {
  const out: Record<string, Json> = {};
  // The functions' roles are compared with their functions.
  const functionRoles = new Set(
    Object.values<Json>(resources).filter((r) => r.Type === 'AWS::Lambda::Function').map((r) => r.Properties.Role?.['Fn::GetAtt']?.[0]),
  );
  for (const [id, r] of Object.entries<Json>(resources)) {
    if (sam ? SAM_MODELLED.has(r.Type) : CDK_EXTRAS.has(r.Type) || functionRoles.has(id) || r.Type === 'AWS::Logs::LogGroup' || r.Type === 'AWS::Lambda::Permission') continue;
    // The CDK's own metadata (construct path) and the function names for this test are not deployed settings.
    const metadata = Object.fromEntries(Object.entries<Json>(r.Metadata ?? {}).filter(([k]) => !k.startsWith('aws:cdk:') && !k.startsWith('forgebench:')));
    const properties = canon(r.Properties, name);
    // A dashboard's body is JSON; compared as such (key order and spacing aside).
    if (r.Type === 'AWS::CloudWatch::Dashboard' && typeof properties?.DashboardBody === 'string') properties.DashboardBody = JSON.parse(properties.DashboardBody);
    out[name(id)] = {
      ...canon(
        {
          Type: r.Type,
          Metadata: Object.keys(metadata).length > 0 ? metadata : undefined,
          DeletionPolicy: deletion(r.Type, r.DeletionPolicy),
          UpdateReplacePolicy: deletion(r.Type, r.UpdateReplacePolicy),
          Condition: r.Condition === undefined ? undefined : name(r.Condition),
          DependsOn: dependsOn(r.DependsOn, name),
        },
        name,
      ),
      Properties: properties,
    };
  }
  return out;
}

/**
 * Resolves the conditions on the stack's partition (`Fn::Equals [AWS::Partition, ...]`) for one
 * partition: each `Fn::If` on one becomes the branch CloudFormation takes there, and the condition
 * goes. SAM decides such names at transform time (X-Ray's policy); the CDK stack, synthesized for
 * any partition, decides them at deploy time.
 */
function resolvePartition(t: Json, partition: Partition): Json {
  const values: Record<string, boolean> = {};
  for (const [id, c] of Object.entries<Json>(t.Conditions ?? {})) {
    const e = c['Fn::Equals'];
    if (!Array.isArray(e) || e.length !== 2) continue;
    const [a, b] = e;
    if (a?.Ref === 'AWS::Partition' && typeof b === 'string') values[id] = b === partition;
    else if (b?.Ref === 'AWS::Partition' && typeof a === 'string') values[id] = a === partition;
  }
  const walk = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const ifs = v['Fn::If'];
    if (Object.keys(v).length === 1 && Array.isArray(ifs) && ifs[0] in values) return walk(values[ifs[0]] ? ifs[1] : ifs[2]);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
  };
  const out = walk(t);
  for (const id of Object.keys(values)) delete out.Conditions[id];
  for (const [id, r] of Object.entries<Json>(out.Resources)) {
    if (r.Condition in values) throw new Error(`${id}: a resource conditional on the partition is not modelled`);
  }
  return out;
}

/** The synthesized CDK template, named by construct path below the gateway. */
export function cdkModel(templatePath: string, partition: Partition = 'aws'): Model {
  const t = resolvePartition(JSON.parse(fs.readFileSync(templatePath, 'utf8')) as Json, partition);
  const names: Record<string, string> = {};
  // Conditions carry no construct path: `Gateway<Id><hash>` -> `<Id>`.
  for (const id of Object.keys(t.Conditions ?? {})) names[id] = id.replace(/^Gateway/, '').replace(/[0-9A-F]{8}$/, '');
  for (const [id, r] of Object.entries<Json>(t.Resources)) {
    const p: string | undefined = r.Metadata?.['aws:cdk:path'];
    if (!p) continue;
    const segments = p.split('/').slice(2);
    if (segments[segments.length - 1] === 'Resource') segments.pop();
    names[id] = segments.join('').replace(/[^A-Za-z0-9]/g, '');
    // SAM names an API's stage `<Api><StageName>Stage`; a reference to it compares by that name.
    if (r.Type === 'AWS::ApiGateway::Stage') names[id] = `${segments[0]}${r.Properties.StageName}Stage`;
  }
  const name = (id: string) => names[id] ?? id;
  const functions: Record<string, FunctionModel> = {};
  const logGroups: string[] = [];
  const invokePermissions: string[] = [];
  const policiesOf = (roleId: string): Json[] => {
    const role = t.Resources[roleId];
    const inline = (role.Properties.Policies ?? []).flatMap((p: Json) => p.PolicyDocument.Statement);
    const attached = Object.values<Json>(t.Resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && (r.Properties.Roles ?? []).some((x: Json) => x.Ref === roleId))
      .flatMap((r) => r.Properties.PolicyDocument.Statement);
    return [...inline, ...attached];
  };
  let definition: Json;
  let stage: Json;
  for (const [id, r] of Object.entries<Json>(t.Resources)) {
    const p = r.Properties ?? {};
    if (r.Type === 'AWS::Lambda::Function') {
      const settings: Record<string, Json> = {};
      for (const f of FUNCTION_FIELDS) if (p[f] !== undefined) settings[f] = canon(p[f], name);
      const roleId = p.Role['Fn::GetAtt'][0];
      const role = t.Resources[roleId];
      const triggers: string[] = [];
      for (const x of Object.values<Json>(t.Resources)) {
        if (x.Type === 'AWS::Events::Rule' && (x.Properties.Targets ?? []).some((tg: Json) => tg.Arn?.['Fn::GetAtt']?.[0] === id)) {
          triggers.push(`schedule ${x.Properties.ScheduleExpression}`);
        }
        if (x.Type === 'AWS::Lambda::EventSourceMapping' && x.Properties.FunctionName?.Ref === id) {
          triggers.push(`sqs ${canon(x.Properties.EventSourceArn, name)} batch=${x.Properties.BatchSize} ${[].concat(x.Properties.FunctionResponseTypes ?? []).join(',')}`);
        }
      }
      const env = canon(p.Environment?.Variables ?? {}, name);
      functions[`${name(id)} (${r.Metadata?.['forgebench:function']})`] = {
        route: env.FORGEBENCH_ROUTE,
        settings,
        env,
        permissions: permissionsOf(policiesOf(roleId), name),
        managedPolicies: (role.Properties.ManagedPolicyArns ?? []).map((m: Json) => managedArn(canon(m, name))).sort(),
        triggers,
      };
    } else if (r.Type === 'AWS::ApiGateway::RestApi') {
      definition = r.Properties.Body;
      stage = apiAndStage(t, name);
    } else if (r.Type === 'AWS::Logs::LogGroup') {
      logGroups.push(JSON.stringify(canon(p, name)));
    } else if (r.Type === 'AWS::Lambda::Permission' && p.Principal === 'apigateway.amazonaws.com') {
      invokePermissions.push(JSON.stringify(canon(p, name)));
    }
  }
  const { routes, rest } = routesOf(definition, name);
  return {
    parameters: parameters(t.Parameters),
    functions,
    routes,
    definition: rest,
    stage,
    conditions: Object.fromEntries(Object.entries<Json>(t.Conditions ?? {}).map(([k, c]) => [name(k), canon(c, name)])),
    invokePermissions: invokePermissions.sort(),
    logGroups: logGroups.sort(),
    resources: others(t.Resources, name, false),
    outputs: outputs(Object.fromEntries(Object.entries<Json>(t.Outputs ?? {}).filter(([k]) => !k.includes('Endpoint'))), name),
  };
}

/** Every difference between two models, as lines a reader can act on; empty when they agree. */
export function differences(sam: Model, cdk: Model): string[] {
  const out: string[] = [];
  const sets = (what: string, a: string[], b: string[]) => {
    for (const x of a) if (!b.includes(x)) out.push(`${what}: only in SAM: ${x}`);
    for (const x of b) if (!a.includes(x)) out.push(`${what}: only in CDK: ${x}`);
  };
  const equal = (what: string, a: Json, b: Json) => {
    const [x, y] = [JSON.stringify(a), JSON.stringify(b)];
    if (x !== y) out.push(`${what}: SAM ${x} but CDK ${y}`);
  };
  sets('routes', sam.routes, cdk.routes);
  for (const d of deepDifferences(sam.definition, cdk.definition, '')) out.push(`API definition (apart from integrations): ${d}`);
  for (const d of deepDifferences(sam.stage, cdk.stage, '')) out.push(`API and stage: ${d}`);
  sets('functions', Object.keys(sam.functions), Object.keys(cdk.functions));
  for (const [fn, s] of Object.entries(sam.functions)) {
    if (s.binary !== GATEWAY_BINARY) out.push(`${fn} binary: SAM builds ${JSON.stringify(s.binary)}, not ${GATEWAY_BINARY} (the one binary every function runs)`);
    if (typeof s.route !== 'string' || s.route === '') out.push(`${fn} FORGEBENCH_ROUTE: SAM sets none`);
    const c = cdk.functions[fn];
    if (!c) continue;
    equal(`${fn} FORGEBENCH_ROUTE`, s.route, c.route);
    for (const f of new Set([...Object.keys(s.settings), ...Object.keys(c.settings)])) equal(`${fn} ${f}`, s.settings[f], c.settings[f]);
    sets(`${fn} environment`, Object.entries(s.env).map((e) => e.join('=')), Object.entries(c.env).map((e) => e.join('=')));
    sets(`${fn} policy`, s.permissions, c.permissions);
    sets(`${fn} managed policies`, s.managedPolicies, c.managedPolicies);
    sets(`${fn} triggers`, s.triggers, c.triggers);
  }
  sets('API invoke permissions', sam.invokePermissions, cdk.invokePermissions);
  sets('log groups', sam.logGroups, cdk.logGroups);
  sets('parameters', Object.keys(sam.parameters), Object.keys(cdk.parameters));
  sets('conditions', Object.keys(sam.conditions), Object.keys(cdk.conditions));
  for (const [k, v] of Object.entries(sam.conditions)) if (cdk.conditions[k]) equal(`condition ${k}`, v, cdk.conditions[k]);
  for (const [k, v] of Object.entries(sam.parameters)) if (cdk.parameters[k]) equal(`parameter ${k}`, v, cdk.parameters[k]);
  sets('resources', Object.keys(sam.resources), Object.keys(cdk.resources));
  for (const k of Object.keys(sam.resources)) {
    if (cdk.resources[k]) for (const d of deepDifferences(sam.resources[k], cdk.resources[k], '')) out.push(`${k}: ${d}`);
  }
  equal('outputs', sam.outputs, cdk.outputs);
  return out;
}

/** Where two JSON values differ, as JSON pointers (at most 10). */
function deepDifferences(a: Json, b: Json, at: string, out: string[] = []): string[] {
  if (out.length >= 10) return out;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const p = `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (!(k in b)) out.push(`${p} only in SAM`);
      else if (!(k in a)) out.push(`${p} only in CDK`);
      else deepDifferences(a[k], b[k], p, out);
    }
  } else if (JSON.stringify(a) !== JSON.stringify(b)) {
    // Long strings (a log format, a description) from a little before where they part.
    let from = 0;
    if (typeof a === 'string' && typeof b === 'string') {
      while (from < a.length && a[from] === b[from]) from++;
      from = Math.max(0, from - 40);
    }
    const show = (x: Json) => (typeof x === 'string' && from > 0 ? `…${JSON.stringify(x.slice(from)).slice(0, 160)}` : JSON.stringify(x)?.slice(0, 200));
    out.push(`${at}: SAM ${show(a)} but CDK ${show(b)}`);
  }
  return out;
}
