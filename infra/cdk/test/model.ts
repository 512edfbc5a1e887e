// Reads the SAM template (infra/template.yaml with its AWS::Include of openapi.yaml) and the
// synthesized CDK template into one comparable model: every reference is rewritten to the name
// of what it points at (the SAM logical id, or the CDK construct path below the gateway joined:
// `Gateway/CancelTask/Function/Resource` -> `CancelTaskFunction`), so the two sides line up.
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
  stage: Json;
  invokePermissions: string[];
  logGroups: string[];
  /** Every resource but functions, the API, log groups and permissions, by name. */
  resources: Record<string, Json>;
  outputs: Record<string, Json>;
}

const PARAMETER_FIELDS = ['Type', 'Default', 'AllowedValues', 'AllowedPattern', 'MinValue', 'MaxValue', 'NoEcho'];
const SAM_FUNCTION_PROPERTIES = new Set([
  'Runtime', 'Handler', 'MemorySize', 'Timeout', 'Architectures', 'ReservedConcurrentExecutions', 'LoggingConfig', 'Description',
  'Tracing', 'Environment', 'Policies', 'Events', 'CodeUri',
]);
const FUNCTION_FIELDS = ['TracingConfig', 'Runtime', 'Handler', 'MemorySize', 'Timeout', 'Architectures', 'ReservedConcurrentExecutions', 'LoggingConfig', 'Description'];

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

const SAM_BASIC = 'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole';
const SAM_SQS = 'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole';

/** The SAM template, as CloudFormation would see it after SAM's transform, for what we compare. */
export function samModel(templatePath: string): Model {
  const t = yaml.load(fs.readFileSync(templatePath, 'utf8'), { schema: CFN_SCHEMA }) as Json;
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
      const statements = (p.Policies ?? []).flatMap((doc: Json) => {
        if (typeof doc === 'string' || !doc.Statement) throw new Error(`${id}: only inline policy documents are modelled`);
        return doc.Statement;
      });
      const triggers: string[] = [];
      const managedPolicies = [SAM_BASIC];
      for (const e of Object.values<Json>(p.Events ?? {})) {
        if (e.Type === 'Schedule') triggers.push(`schedule ${e.Properties.Schedule}`);
        else if (e.Type === 'SQS') {
          managedPolicies.push(SAM_SQS);
          triggers.push(`sqs ${canon(e.Properties.Queue, name)} batch=${e.Properties.BatchSize} ${[].concat(e.Properties.FunctionResponseTypes ?? []).join(',')}`);
        } else throw new Error(`${id}: event type ${e.Type} is not modelled`);
      }
      functions[`${id} (${r.Metadata?.BuildProperties?.Binary})`] = {
        settings,
        env,
        permissions: permissionsOf(statements, name),
        managedPolicies: managedPolicies.sort(),
        triggers,
      };
    } else if (r.Type === 'AWS::Serverless::Api') {
      const unmodelled = Object.keys(p).filter((k) => !['StageName', 'DefinitionBody', 'EndpointConfiguration', 'MethodSettings'].includes(k));
      if (unmodelled.length > 0 || r.DependsOn) throw new Error(`${id}: ${[...unmodelled, ...(r.DependsOn ? ['DependsOn'] : [])].join(', ')} not compared by the drift test yet (test/model.ts)`);
      const include = p.DefinitionBody?.['Fn::Transform'];
      if (include?.Name !== 'AWS::Include') throw new Error('the Api must include its definition');
      const location = path.resolve(path.dirname(templatePath), include.Parameters.Location);
      definition = yaml.load(fs.readFileSync(location, 'utf8'));
      stage = canon(
        { StageName: p.StageName, EndpointConfiguration: p.EndpointConfiguration?.Type, MethodSettings: p.MethodSettings },
        name,
      );
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
    invokePermissions: invokePermissions.sort(),
    logGroups: logGroups.sort(),
    resources: others(t.Resources, name, true),
    outputs: Object.fromEntries(Object.entries<Json>(t.Outputs ?? {}).map(([k, o]) => [k, canon(o.Value, name)])),
  };
}

const SAM_MODELLED = new Set(['AWS::Serverless::Function', 'AWS::Serverless::Api', 'AWS::Logs::LogGroup', 'AWS::Lambda::Permission']);
/** What the CDK stack adds on purpose (SAM's transform makes the same from its shorthand, or TLS-only queues). */
const CDK_EXTRAS = new Set([
  'AWS::Lambda::Function', 'AWS::IAM::Role', 'AWS::Lambda::EventSourceMapping', 'AWS::Events::Rule',
  'AWS::ApiGateway::RestApi', 'AWS::ApiGateway::Deployment', 'AWS::ApiGateway::Stage', 'AWS::CDK::Metadata',
]);
const CDK_EXTRA_NAMES = new Set(['PushQueuesTlsOnly']);

/** Every other resource, by name: type, properties, deletion policies, conditions, dependencies left out. */
function others(resources: Json, name: (id: string) => string, sam: boolean): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [id, r] of Object.entries<Json>(resources)) {
    if (sam ? SAM_MODELLED.has(r.Type) : CDK_EXTRAS.has(r.Type) || r.Type === 'AWS::Logs::LogGroup' || r.Type === 'AWS::Lambda::Permission' || CDK_EXTRA_NAMES.has(name(id))) continue;
    out[name(id)] = canon({ Type: r.Type, Properties: r.Properties, DeletionPolicy: r.DeletionPolicy, UpdateReplacePolicy: r.UpdateReplacePolicy, Condition: r.Condition }, name);
  }
  return out;
}

/** The synthesized CDK template, named by construct path below the gateway. */
export function cdkModel(templatePath: string): Model {
  const t = JSON.parse(fs.readFileSync(templatePath, 'utf8')) as Json;
  const names: Record<string, string> = {};
  for (const [id, r] of Object.entries<Json>(t.Resources)) {
    const p: string | undefined = r.Metadata?.['aws:cdk:path'];
    if (!p) continue;
    const segments = p.split('/').slice(2);
    if (segments[segments.length - 1] === 'Resource') segments.pop();
    names[id] = segments.join('').replace(/[^A-Za-z0-9]/g, '');
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
      functions[`${name(id)} (${r.Metadata?.['forgebench:function']})`] = {
        settings,
        env: canon(p.Environment?.Variables ?? {}, name),
        permissions: permissionsOf(policiesOf(roleId), name),
        managedPolicies: (role.Properties.ManagedPolicyArns ?? []).map((m: Json) => canon(m, name)).sort(),
        triggers,
      };
    } else if (r.Type === 'AWS::ApiGateway::RestApi') {
      definition = r.Properties.Body;
    } else if (r.Type === 'AWS::ApiGateway::Stage') {
      const restApi = t.Resources[p.RestApiId.Ref];
      stage = canon(
        {
          StageName: p.StageName,
          EndpointConfiguration: restApi.Properties.EndpointConfiguration?.Types?.[0],
          MethodSettings: (p.MethodSettings ?? []).map((m: Json) => {
            const { DataTraceEnabled, ...rest } = m;
            if (DataTraceEnabled) throw new Error('data trace is on');
            return rest;
          }),
        },
        name,
      );
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
    invokePermissions: invokePermissions.sort(),
    logGroups: logGroups.sort(),
    resources: others(t.Resources, name, false),
    outputs: Object.fromEntries(Object.entries<Json>(t.Outputs ?? {}).filter(([k]) => !k.includes('Endpoint')).map(([k, o]) => [k, canon(o.Value, name)])),
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
  equal('API stage', sam.stage, cdk.stage);
  sets('functions', Object.keys(sam.functions), Object.keys(cdk.functions));
  for (const [fn, s] of Object.entries(sam.functions)) {
    const c = cdk.functions[fn];
    if (!c) continue;
    for (const f of new Set([...Object.keys(s.settings), ...Object.keys(c.settings)])) equal(`${fn} ${f}`, s.settings[f], c.settings[f]);
    sets(`${fn} environment`, Object.entries(s.env).map((e) => e.join('=')), Object.entries(c.env).map((e) => e.join('=')));
    sets(`${fn} policy`, s.permissions, c.permissions);
    sets(`${fn} managed policies`, s.managedPolicies, c.managedPolicies);
    sets(`${fn} triggers`, s.triggers, c.triggers);
  }
  sets('API invoke permissions', sam.invokePermissions, cdk.invokePermissions);
  sets('log groups', sam.logGroups, cdk.logGroups);
  sets('parameters', Object.keys(sam.parameters), Object.keys(cdk.parameters));
  for (const [k, v] of Object.entries(sam.parameters)) if (cdk.parameters[k]) equal(`parameter ${k}`, v, cdk.parameters[k]);
  sets('resources', Object.keys(sam.resources), Object.keys(cdk.resources));
  for (const k of Object.keys(sam.resources)) if (cdk.resources[k]) equal(k, sam.resources[k], cdk.resources[k]);
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
    out.push(`${at}: SAM ${JSON.stringify(a)?.slice(0, 200)} but CDK ${JSON.stringify(b)?.slice(0, 200)}`);
  }
  return out;
}
