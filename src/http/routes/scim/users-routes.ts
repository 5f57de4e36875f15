import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../core/errors.ts';
import type { Store } from '../../../core/ports.ts';
import type { User } from '../../../core/users/user.ts';
import { addUser, deactivateUser, findUsers, getUser, updateUser, type UserChanges } from '../../../core/users/users-service.ts';
import { parseScimFilter } from '../../../scim/filter.ts';
import { listResponse, readListWindow, singleParameter } from '../../../scim/list.ts';
import { readPatchOperations, patchUserResource } from '../../../scim/patch-request.ts';
import { project, readProjection, type Projection } from '../../../scim/projection.ts';
import { userDefinition } from '../../../scim/schema-definitions.ts';
import { userFilterCondition } from '../../../scim/user-filter.ts';
import { readUserResource, scimUserVersion, toUserResource, type UserResourceState } from '../../../scim/user-resource.ts';
import { parseIfMatch } from '../../etag.ts';
import { queryOf, scimActor, scimBaseUrl, sendScim, workspaceOf } from './scim-reply.ts';

/** A user deleted through SCIM answers 404 there (docs/contract.md Part B). */
function notFound(): AppError {
  return new AppError('user_not_found', 'No such user in this workspace.');
}

/** The user `id`, unless it was deleted through SCIM. */
async function scimUser(store: Store, workspaceId: number, id: string): Promise<User> {
  const user = await getUser(store, workspaceId, { id });
  if (user.scimDeleted) throw notFound();
  return user;
}

/** The core change that makes a user what a resource says. */
function changesOf(state: UserResourceState): UserChanges {
  return {
    email: state.email,
    firstName: state.firstName,
    lastName: state.lastName,
    externalId: state.externalId,
    scimAttributes: state.scimAttributes,
    ...(state.status === undefined ? {} : { status: state.status }),
    ...(state.role === undefined ? {} : { role: state.role }),
    ...(state.apps === undefined ? {} : { apps: state.apps }),
  };
}

/** The projection a request asks for. */
function projectionOf(request: FastifyRequest): Projection {
  const query = queryOf(request);
  return readProjection(userDefinition, {
    attributes: singleParameter(query, 'attributes'),
    excludedAttributes: singleParameter(query, 'excludedAttributes'),
  });
}

/** Sends a user resource with its ETag. */
function sendUser(request: FastifyRequest, reply: FastifyReply, status: number, user: User): FastifyReply {
  reply.header('etag', scimUserVersion(user.version));
  return sendScim(reply, status, project(toUserResource(user, scimBaseUrl(request)), projectionOf(request)));
}

/**
 * `/Users` and `/Users/{id}`: list with filter, paging and projection; create (or reactivate
 * a deactivated email); read; replace; patch; delete (deactivate, and gone from SCIM until a
 * POST of the same userName). Every change is the core's user change with actor `scim`.
 * Source: RFC 7644 §3.3–3.6; docs/contract.md Part B, SCIM 2.0 provisioning.
 */
export async function scimUsersRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  const hidden = { schema: { hide: true } };

  app.get('/Users', hidden, async (request, reply) => {
    const query = queryOf(request);
    const window = readListWindow(query);
    const projection = projectionOf(request);
    const filter = singleParameter(query, 'filter');
    const where = filter === undefined ? undefined : userFilterCondition(parseScimFilter(filter));
    const { rows, total } = await findUsers(
      store,
      workspaceOf(request),
      { status: 'all', excludeScimDeleted: true, ...(where ? { where } : {}) },
      { offset: window.offset, limit: window.limit },
    );
    const base = scimBaseUrl(request);
    return sendScim(reply, 200, listResponse(rows.map((user) => project(toUserResource(user, base), projection)), total, window.startIndex));
  });

  app.post('/Users', hidden, async (request, reply) => {
    const state = await readUserResource(request.body, 'create');
    const { user } = await addUser(
      store,
      workspaceOf(request),
      {
        email: state.email,
        role: state.role ?? 'non_owner',
        apps: state.apps ?? [],
        firstName: state.firstName ?? undefined,
        lastName: state.lastName ?? undefined,
        status: state.status ?? 'active',
        externalId: state.externalId,
        scimAttributes: state.scimAttributes,
      },
      scimActor(request),
    );
    reply.header('location', `${scimBaseUrl(request)}/Users/${user.id}`);
    return sendUser(request, reply, 201, user);
  });

  app.get('/Users/:id', hidden, async (request, reply) => {
    const { id } = request.params as { id: string };
    return sendUser(request, reply, 200, await scimUser(store, workspaceOf(request), id));
  });

  app.put('/Users/:id', hidden, async (request, reply) => {
    const { id } = request.params as { id: string };
    const ifMatch = parseIfMatch(request.headers['if-match']);
    const state = await readUserResource(request.body, 'replace');
    const { user } = await updateUser(
      store,
      workspaceOf(request),
      { id },
      (current) => {
        if (current.scimDeleted) throw notFound();
        return changesOf(state);
      },
      scimActor(request),
      ifMatch === undefined ? {} : { ifMatch },
    );
    return sendUser(request, reply, 200, user);
  });

  // PATCH answers 200 with the user (RFC 7644 §3.5.2's first option; what Okta's and Entra
  // ID's documentation show), also when the operations changed nothing.
  app.patch('/Users/:id', hidden, async (request, reply) => {
    const { id } = request.params as { id: string };
    const ifMatch = parseIfMatch(request.headers['if-match']);
    const operations = readPatchOperations(request.body);
    const base = scimBaseUrl(request);
    const { user } = await updateUser(
      store,
      workspaceOf(request),
      { id },
      async (current) => {
        if (current.scimDeleted) throw notFound();
        const patched = await patchUserResource(toUserResource(current, base), operations);
        return patched === undefined ? {} : changesOf(await readUserResource(patched, 'patched'));
      },
      scimActor(request),
      ifMatch === undefined ? {} : { ifMatch },
    );
    return sendUser(request, reply, 200, user);
  });

  app.delete('/Users/:id', hidden, async (request, reply) => {
    const { id } = request.params as { id: string };
    const ifMatch = parseIfMatch(request.headers['if-match']);
    await scimUser(store, workspaceOf(request), id);
    await deactivateUser(store, workspaceOf(request), { id }, scimActor(request), {
      scimDelete: true,
      ...(ifMatch === undefined ? {} : { ifMatch }),
    });
    return reply.code(204).send();
  });
}
