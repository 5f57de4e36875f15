/* Queries several pages share, with one cache key each. */
import { useQuery } from '@tanstack/react-query';
import { listProducts } from './users.ts';
import { useScopes } from './session.ts';

/**
 * The workspace's product catalogue (for pickers and the product filter), cached a minute;
 * not asked for when the session lacks `products:read` (the API would refuse it).
 */
export function useCatalogue() {
  const allowed = useScopes().allows('products:read');
  return useQuery({ queryKey: ['products'], queryFn: ({ signal }) => listProducts(signal), staleTime: 60_000, enabled: allowed });
}

/** Cache key prefix of everything read about users: invalidated after any change of one. */
export const USERS_KEY = 'users';
