import { LRUCache } from 'lru-cache';
import { andThen, type Awaitable } from '../core/awaitable.ts';
import type { Credentials } from '../core/api-keys/api-key-repository.ts';
import type { Product } from '../core/products/product-repository.ts';

/** Default time a process serves verified keys and the catalogue from memory: 5 s (docs/performance.md). */
export const DEFAULT_CACHE_TTL_MS = 5_000;
/** Verified keys remembered at most; the least recently used go first. */
const MAX_CREDENTIALS = 10_000;

/**
 * What every request reads and almost nothing writes, kept in process memory for a short
 * time: the verified credentials of a (subdomain, key hash) and the product catalogue.
 * Only positive answers are kept, so a new workspace or key works at once.
 *
 * Changes made through this process take effect at once: the store calls {@link invalidate}
 * after the transaction that revoked a key, deleted a workspace or changed the catalogue
 * commits. A read that started before an invalidation is not kept (a generation counter),
 * so a concurrent revocation cannot be undone by a late answer. Changes made by another
 * process reach this one through {@link clear}: at once from a sibling worker (`server/workers.ts`),
 * within milliseconds from any replica on the same PostgreSQL (`storage/notify.ts`), and after
 * at most `ttlMs` while neither can tell. Source: docs/performance.md; docs/contract.md
 * Part B, "Running several replicas".
 */
export class ReadCache {
  private readonly credentials: LRUCache<string, Credentials> | undefined;
  private catalogue: { readonly products: Product[]; readonly until: number } | undefined;
  private generation = 0;
  /** False while changes made elsewhere may go unannounced (see {@link trust}). */
  private trusted = true;

  /**
   * @param ttlMs - how long an entry may be served, in ms; 0 turns the cache off.
   * @param onInvalidate - called after each local change (to tell sibling processes).
   * @param now - the clock entries age by (ms, any origin); `performance.now` by default.
   */
  constructor(
    private readonly ttlMs: number,
    private readonly onInvalidate: () => void = () => {},
    private readonly now: () => number = () => performance.now(),
  ) {
    this.credentials = ttlMs > 0 ? new LRUCache({ max: MAX_CREDENTIALS, ttl: ttlMs, perf: { now } }) : undefined;
  }

  /**
   * Cached credentials (at once), else a promise of `load()`'s, kept when they name a live key and nothing changed
   * meanwhile. A key's expiry is not a change anybody announces: the cached key carries its
   * `expiresAt` and authentication compares it with the clock on every request.
   */
  resolve(subdomain: string, keyHash: string, load: () => Awaitable<Credentials>): Awaitable<Credentials> {
    if (!this.trusted) return load();
    const key = `${subdomain}\u0000${keyHash}`;
    const cached = this.credentials?.get(key);
    // Returned as is, not as a promise: the request that finds its key here goes on at once.
    if (cached) return cached;
    const generation = this.generation;
    return andThen(load(), (loaded) => {
      if (this.credentials && loaded.workspace && loaded.apiKey && generation === this.generation) {
        this.credentials.set(key, loaded);
      }
      return loaded;
    });
  }

  /** The cached catalogue (at once), else a promise of `load()`'s, kept as for {@link resolve}. */
  products(load: () => Awaitable<Product[]>): Awaitable<Product[]> {
    if (!this.trusted) return load();
    const now = this.now();
    if (this.catalogue && this.catalogue.until > now) return this.catalogue.products;
    const generation = this.generation;
    return andThen(load(), (products) => {
      if (this.ttlMs > 0 && generation === this.generation) this.catalogue = { products, until: now + this.ttlMs };
      return products;
    });
  }

  /**
   * While `trusted` is false, every read goes to the database and nothing is kept: the
   * channel that announces other processes' changes is down (the cache listener lost its
   * connection, e.g. during a database failover), so only reading afresh stays exact.
   * Turning it off forgets everything; turning it back on starts from empty.
   */
  trust(trusted: boolean): void {
    this.trusted = trusted;
    this.clear();
  }

  /** Forgets everything (another process announced a change). */
  clear(): void {
    this.generation += 1;
    this.credentials?.clear();
    this.catalogue = undefined;
  }

  /** Forgets everything after a change made through this process, and announces it. */
  invalidate(): void {
    this.clear();
    this.onInvalidate();
  }
}
