import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Group } from '../../../core/groups/group.ts';
import {
  changeGroupMembers,
  getGroup,
  groupMembers,
  linkGroup,
  listGroups,
  membershipsOf,
  unlinkGroup,
  updateGroup,
} from '../../../core/groups/groups-service.ts';
import type { Store } from '../../../core/ports.ts';
import { MAX_GROUP_MEMBERS } from '../../../scim/constants.ts';
import { parseScimFilter } from '../../../scim/filter.ts';
import { groupMatches, memberIdsOfGroupFilter, readGroupPatch, readGroupResource, toGroupResource } from '../../../scim/group-resource.ts';
import { listResponse, readListWindow, singleParameter } from '../../../scim/list.ts';
import { readPatchOperations } from '../../../scim/patch-request.ts';
import { project, readProjection, shows, type Projection } from '../../../scim/projection.ts';
import { groupDefinition } from '../../../scim/schema-definitions.ts';
import { queryOf, scimActor, scimBaseUrl, sendScim, workspaceOf } from './scim-reply.ts';

/** The projection a request asks for, and whether it asked for one at all. */
function projectionOf(request: FastifyRequest): { projection: Projection; asked: boolean } {
  const query = queryOf(request);
  const attributes = singleParameter(query, 'attributes');
  const excludedAttributes = singleParameter(query, 'excludedAttributes');
  return {
    projection: readProjection(groupDefinition, { attributes, excludedAttributes }),
    asked: attributes !== undefined || excludedAttributes !== undefined,
  };
}

/** A group's resource as the request's projection shows it (members looked up only when shown). */
async function groupResource(store: Store, request: FastifyRequest, group: Group, projection: Projection): Promise<Record<string, unknown>> {
  const members = shows(projection, 'members') ? (await groupMembers(store, workspaceOf(request), group, MAX_GROUP_MEMBERS)).rows : undefined;
  return project(toGroupResource(group, members, scimBaseUrl(request)), projection);
}

async function sendGroup(store: Store, request: FastifyRequest, reply: FastifyReply, status: number, group: Group): Promise<FastifyReply> {
  return sendScim(reply, status, await groupResource(store, request, group, projectionOf(request).projection));
}

/**
 * `/Groups` and `/Groups/{id}`: groups are product roles of the catalogue linked to the
 * workspace; members are the users holding the role; changing members grants or revokes it
 * through the core (actor `scim`). PATCH answers 204 (as Okta and Entra ID expect for member
 * changes), or 200 with the group when `attributes`/`excludedAttributes` ask for it (RFC 7644
 * §3.5.2). Source: docs/contract.md Part B, SCIM 2.0 provisioning; RFC 7644 §3.3–3.6.
 */
export async function scimGroupsRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  const hidden = { schema: { hide: true } };

  app.get('/Groups', hidden, async (request, reply) => {
    const query = queryOf(request);
    const window = readListWindow(query);
    const { projection } = projectionOf(request);
    const text = singleParameter(query, 'filter');
    const filter = text === undefined ? undefined : parseScimFilter(text);
    const workspaceId = workspaceOf(request);
    const groups = await listGroups(store, workspaceId);
    let matching = groups;
    if (filter) {
      const memberships = await membershipsOf(store, workspaceId, [...new Set(memberIdsOfGroupFilter(filter))], groups);
      matching = groups.filter((group) =>
        groupMatches(
          { group, members: [...memberships].filter(([, held]) => held.has(group.id)).map(([id]) => id) },
          filter,
        ),
      );
    }
    const page = matching.slice(window.offset, window.offset + window.limit);
    const resources = [];
    for (const group of page) resources.push(await groupResource(store, request, group, projection));
    return sendScim(reply, 200, listResponse(resources, matching.length, window.startIndex));
  });

  app.post('/Groups', hidden, async (request, reply) => {
    const state = await readGroupResource(request.body);
    const actor = scimActor(request);
    const group = await linkGroup(store, workspaceOf(request), { displayName: state.displayName, externalId: state.externalId }, actor);
    if (state.members?.length) {
      await changeGroupMembers(store, workspaceOf(request), group, { base: 'keep', add: state.members, remove: [] }, actor);
    }
    reply.header('location', `${scimBaseUrl(request)}/Groups/${group.id}`);
    return sendGroup(store, request, reply, 201, group);
  });

  app.get('/Groups/:id', hidden, async (request, reply) => {
    const { id } = request.params as { id: string };
    return sendGroup(store, request, reply, 200, await getGroup(store, workspaceOf(request), id));
  });

  // PUT replaces displayName (only to the same name) and externalId, and the members when the
  // body has `members`: a PUT without them keeps the role's holders (no revocation by omission).
  app.put('/Groups/:id', hidden, async (request, reply) => {
    const { id } = request.params as { id: string };
    const state = await readGroupResource(request.body);
    const actor = scimActor(request);
    const group = await updateGroup(store, workspaceOf(request), id, { displayName: state.displayName, externalId: state.externalId }, actor);
    if (state.members !== undefined) {
      await changeGroupMembers(store, workspaceOf(request), group, { base: 'none', add: state.members, remove: [] }, actor);
    }
    return sendGroup(store, request, reply, 200, group);
  });

  app.patch('/Groups/:id', hidden, async (request, reply) => {
    const { id } = request.params as { id: string };
    const patch = readGroupPatch(readPatchOperations(request.body));
    const actor = scimActor(request);
    const workspaceId = workspaceOf(request);
    let group = await getGroup(store, workspaceId, id);
    if (patch.displayName !== undefined || patch.externalId !== undefined) {
      group = await updateGroup(
        store,
        workspaceId,
        id,
        {
          ...(patch.displayName === undefined ? {} : { displayName: patch.displayName }),
          ...(patch.externalId === undefined ? {} : { externalId: patch.externalId }),
        },
        actor,
      );
    }
    await changeGroupMembers(store, workspaceId, group, patch.members, actor);
    if (!projectionOf(request).asked) return reply.code(204).send();
    return sendGroup(store, request, reply, 200, group);
  });

  app.delete('/Groups/:id', hidden, async (request, reply) => {
    const { id } = request.params as { id: string };
    await unlinkGroup(store, workspaceOf(request), id, scimActor(request));
    return reply.code(204).send();
  });
}
