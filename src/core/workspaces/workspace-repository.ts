import type { PageRequest, Slice } from '../pagination.ts';

/*
 * Workspaces as the domain stores them: the workspace and its port (storage/workspaces.queries.ts).
 */

/** A customer workspace. */
export interface Workspace {
  readonly id: number;
  readonly subdomain: string;
  readonly name: string;
  readonly createdAt: Date;
}

/** Workspaces, addressed by lower-cased subdomain. */
export interface WorkspaceRepository {
  insert(subdomain: string, name: string): Promise<Workspace>;
  findBySubdomain(subdomain: string): Promise<Workspace | undefined>;
  /** The subdomains of the workspaces with these ids (a deleted one is absent). */
  findSubdomains(ids: readonly number[]): Promise<Map<number, string>>;
  findPage(page: PageRequest): Promise<Slice<Workspace>>;
  delete(id: number): Promise<void>;
  /** Locks the workspace row until commit (serialises last-owner checks). */
  lock(id: number): Promise<void>;
}
