import type { Group } from './group.ts';

/*
 * SCIM groups as the domain stores them: the port (storage/groups.queries.ts); the group is in group.ts.
 */

/** SCIM groups linked in workspaces (product roles made assignable as groups). */
export interface GroupRepository {
  /** Links a product role; a role linked already → AppError `group_exists` (a unique constraint). */
  insert(workspaceId: number, group: Pick<Group, 'id' | 'product' | 'role' | 'externalId'>): Promise<Group>;
  /** A group by id; `lock` holds its row until commit. */
  find(workspaceId: number, id: string, options?: { lock?: boolean }): Promise<Group | undefined>;
  /** Every group of the workspace, in linking order. */
  findAll(workspaceId: number): Promise<Group[]>;
  /** Changes a group's `externalId` (and its update time). */
  update(workspaceId: number, id: string, changes: { externalId: string | null }): Promise<Group>;
  /** Removes a group's link. */
  delete(workspaceId: number, id: string): Promise<void>;
}
