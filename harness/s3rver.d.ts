// s3rver ships no types: the part of its API the audit stream tests and benchmark use.
declare module 's3rver' {
  import type { AddressInfo } from 'node:net';
  interface S3rverOptions {
    readonly address?: string;
    readonly port?: number;
    readonly directory: string;
    readonly silent?: boolean;
    readonly configureBuckets?: ReadonlyArray<{ readonly name: string }>;
    /** A PEM key and certificate: s3rver then serves https. */
    readonly key?: string;
    readonly cert?: string;
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
    /** S3 event notifications: one per object stored (`ObjectCreated:Put`) or removed. */
    on(event: 'event', listener: (event: { readonly Records: ReadonlyArray<{ readonly eventName: string; readonly s3: { readonly object: { readonly key: string } } }> }) => void): this;
  }
}
