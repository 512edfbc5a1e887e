import { createHash } from 'node:crypto';
import { CfnElement, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

// The construct's stateful resources were L1 resources (`CfnTable`, `CfnQueue`, `CfnKey`, ...) at
// `<gateway>/<Id>`; as L2 resources their L1 sits at `<gateway>/<Id>/Resource`, whose logical id
// CDK computes from that longer path: a new logical id, which CloudFormation deploys as a new
// resource and deletes the old one (a new, empty table or bucket; a new key that cannot open what
// the old one sealed; log groups whose names collide). So each keeps the logical id it had.

/**
 * The logical id CDK gives a CloudFormation element at `path` (the construct ids below the
 * stack), as `Stack.allocateLogicalId` computes it (aws-cdk-lib core/lib/private/uniqueid.ts):
 * `Default` components dropped; one component, itself without non-alphanumerics; otherwise the
 * components (consecutive repeats and `Resource` left out, non-alphanumerics removed) followed
 * by the first 8 hex digits, upper case, of the MD5 of the path joined with `/`.
 * test/construct.test.ts holds this to CDK's own allocation.
 */
export function logicalIdAt(path: readonly string[]): string {
  const components = path.filter((c) => c !== 'Default');
  if (components.length === 0) throw new Error('no path to name');
  const alphanumeric = (s: string) => s.replace(/[^A-Za-z0-9]/g, '');
  if (components.length === 1) {
    const candidate = alphanumeric(components[0]!);
    if (candidate.length <= 255) return candidate;
  }
  const hash = createHash('md5').update(components.join('/')).digest('hex').slice(0, 8).toUpperCase();
  const human: string[] = [];
  for (const c of components) if (human.length === 0 || !human[human.length - 1]!.endsWith(c)) human.push(c);
  return human.filter((c) => c !== 'Resource').map(alphanumeric).join('').slice(0, 240) + hash;
}

/** The construct ids from below `scope`'s stack down to `scope` itself. */
function pathBelowStack(scope: IConstruct): string[] {
  const stack = Stack.of(scope);
  const scopes = scope.node.scopes;
  return scopes.slice(scopes.indexOf(stack) + 1).map((s) => s.node.id);
}

/**
 * Gives the L1 resource of an L2 construct the logical id it had as an L1 at the L2's own path
 * (or at `asIf`, a sibling id under the same parent, for an L1 that was made apart from the L2
 * that now owns it: a bucket's policy).
 */
export function keepLogicalId(l2: IConstruct, asIf?: { parent: IConstruct; id: string }): void {
  const resource = l2.node.defaultChild;
  if (!(resource instanceof CfnElement)) throw new Error(`${l2.node.path} has no CloudFormation resource`);
  const path = asIf ? [...pathBelowStack(asIf.parent), asIf.id] : pathBelowStack(l2);
  resource.overrideLogicalId(logicalIdAt(path));
}
