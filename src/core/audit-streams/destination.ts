/**
 * Where an audit stream sends its rows (docs/api.md, "Audit streams"), as the domain holds it.
 * Credentials (`token`, `secretAccessKey`, the `https` stream's signing secret) are write-only:
 * stored encrypted, never shown again.
 */
export type StreamDestination = HttpsDestination | SplunkHecDestination | S3Destination | SyslogDestination;

/** Batches of JSON Lines POSTed to `url`, signed like webhooks (Standard Webhooks). */
export interface HttpsDestination {
  readonly type: 'https';
  readonly url: string;
  /** The signing secret (`whsec_…`), made by the server at creation; present where a batch is sent. */
  readonly secret?: string;
}

/** Splunk's HTTP Event Collector: `<url>/services/collector/event`, `Authorization: Splunk <token>`. */
export interface SplunkHecDestination {
  readonly type: 'splunk_hec';
  /** The collector's base URL. */
  readonly url: string;
  readonly token: string;
}

/** One gzipped JSON Lines object per batch in an S3 (or S3-compatible) bucket. */
export interface S3Destination {
  readonly type: 's3';
  /** An S3-compatible server's URL; absent for AWS itself. */
  readonly endpoint?: string;
  readonly region: string;
  readonly bucket: string;
  /** Prepended to every object key, e.g. `wum/audit/`. */
  readonly prefix?: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** RFC 5424 messages over TLS with RFC 5425 octet-counting framing. */
export interface SyslogDestination {
  readonly type: 'syslog';
  readonly host: string;
  readonly port: number;
  /** A PEM CA certificate to trust instead of the system's (for a private CA). */
  readonly caCertificate?: string;
}
