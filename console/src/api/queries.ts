/* Queries several pages share, with one cache key each. */
import { useQuery } from '@tanstack/react-query';
import { listProducts } from './users.ts';

/** The workspace's product catalogue (for pickers and the product filter), cached a minute. */
export function useCatalogue() {
  return useQuery({ queryKey: ['products'], queryFn: ({ signal }) => listProducts(signal), staleTime: 60_000 });
}

/** Cache key prefix of everything read about users: invalidated after any change of one. */
export const USERS_KEY = 'users';
