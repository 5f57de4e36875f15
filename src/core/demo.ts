import { SYSTEM_ACTOR } from './actor.ts';
import { putProduct } from './products/products-service.ts';
import type { Store } from './ports.ts';
import { addUser } from './users/users-service.ts';
import { createWorkspace, type CreatedWorkspace } from './workspaces/workspaces-service.ts';

/** Subdomain of the demo workspace created on a new embedded database (docs/contract.md Part B, Running). */
export const DEMO_SUBDOMAIN = 'demo';

/** The small catalogue a newcomer can use at once, roles in display order. */
export const DEMO_PRODUCTS: ReadonlyArray<{ name: string; roles: string[] }> = [
  { name: 'analytics', roles: ['editor', 'viewer'] },
  { name: 'crm', roles: ['admin', 'member'] },
  { name: 'helpdesk', roles: ['agent', 'supervisor'] },
];

/**
 * Creates the demo catalogue, the `demo` workspace with an API key, and one owner, so the
 * first listing shows a user and the owner rule has someone to protect.
 * @returns the workspace and its key (plaintext, to print once).
 */
export async function seedDemoWorkspace(store: Store): Promise<CreatedWorkspace> {
  for (const product of DEMO_PRODUCTS) await putProduct(store, product.name, product.roles, SYSTEM_ACTOR);
  const created = await createWorkspace(store, DEMO_SUBDOMAIN, 'Demo workspace', SYSTEM_ACTOR);
  await addUser(
    store,
    created.workspace.id,
    {
      email: 'owner@demo.example',
      role: 'owner',
      firstName: 'Olivia',
      lastName: 'Owner',
      apps: [{ name: 'crm', role: 'admin' }],
    },
    SYSTEM_ACTOR,
  );
  return created;
}
