import { AppError } from '../errors.ts';
import type { Repositories } from '../ports.ts';
import type { Workspace } from './workspace-repository.ts';

/**
 * Finds a workspace by subdomain, case-insensitively.
 * @throws AppError `workspace_not_found` (404).
 */
export async function requireWorkspace(repos: Repositories, subdomain: string): Promise<Workspace> {
  const workspace = await repos.workspaces.findBySubdomain(subdomain.toLowerCase());
  if (!workspace) throw new AppError('workspace_not_found', `No workspace "${subdomain}".`);
  return workspace;
}
