/*
 * Whose workspace a page manages, and through which API: the operator manages any workspace
 * through `/admin/v1/workspaces/{subdomain}/…`, an owner their own through `/api/external/v2/…`
 * on the workspace's host. Both APIs serve these resources with the same shapes (docs/api.md,
 * "Self-service"), so one page component serves both and only the path differs.
 */

/** The operator managing workspace `subdomain`, or an owner (a workspace session) managing theirs. */
export interface Where {
  readonly as: 'operator' | 'owner';
  readonly subdomain: string;
}

const OPERATOR_PREFIX = '/admin/v1/workspaces/{subdomain}';
const OWNER_PREFIX = '/api/external/v2';

/**
 * The path to call for `where`, given the path of either API from sdk/schema.ts (which types
 * the call): an operator path becomes the owner's and the other way round, the subdomain
 * written into the operator's. The typed path is returned as its own type, so openapi-fetch
 * checks the call against the shared shapes.
 * @param where - who manages which workspace.
 * @param path - an operator path under `/admin/v1/workspaces/{subdomain}` or a workspace API path.
 * @throws Error when `path` is under neither prefix (a programming error).
 */
export function pathFor<P extends string>(where: Where, path: P): P {
  const rest = path.startsWith(OPERATOR_PREFIX)
    ? path.slice(OPERATOR_PREFIX.length)
    : path.startsWith(OWNER_PREFIX)
      ? path.slice(OWNER_PREFIX.length)
      : undefined;
  if (rest === undefined) throw new Error(`${path} is not a workspace resource`);
  return (where.as === 'owner' ? `${OWNER_PREFIX}${rest}` : `/admin/v1/workspaces/${encodeURIComponent(where.subdomain)}${rest}`) as P;
}

/** The console page of the workspace's settings: the operator's page of it, or the owner's Settings. */
export function settingsHref(where: Where): string {
  return where.as === 'owner' ? '/settings' : `/workspaces/${encodeURIComponent(where.subdomain)}`;
}

/** A short cache key part, so the operator's and the owner's answers never mix. */
export function whereKey(where: Where): string {
  return `${where.as}:${where.subdomain}`;
}
