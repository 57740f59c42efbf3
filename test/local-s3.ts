/**
 * A local S3-compatible server (s3rver) for the tests of the S3 media storage: on 127.0.0.1, a free
 * port and a temporary directory, with one bucket, stopped and removed when the scope ends. Nothing
 * here skips: a server that cannot start fails the test that wanted it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { createS3Client, type S3Location } from '../src/modules/media/media-storage-s3.ts';
import type { Scope } from './harness.ts';

/** The little of s3rver (a CommonJS package without types) that the tests use. */
interface S3rver {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
  httpServer?: Server;
}
const S3rver = createRequire(import.meta.url)('s3rver') as new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
  configureBuckets: { name: string }[];
}) => S3rver;

/** s3rver's built-in account; it checks every request's signature against it. */
const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface LocalS3 {
  /** The bucket's location, as a parsed MEDIA_STORAGE_URL gives it, with no key prefix. */
  location: S3Location;
  /** A MEDIA_STORAGE_URL for the bucket, with keys under `prefix`, the credentials in the URL. */
  url(prefix?: string): string;
  /** The keys in the bucket, in order, read through the S3 API. */
  keys(): Promise<string[]>;
  /** The bytes of one object, read through the S3 API. */
  object(key: string): Promise<Buffer>;
}

export async function startLocalS3(scope: Scope): Promise<LocalS3> {
  const directory = mkdtempSync(path.join(tmpdir(), 'msgsvc-s3-'));
  const bucket = 'media-test';
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: bucket }] });
  scope.after(async () => {
    // Clients kept alive by the storages under test would hold close() open until they time out.
    server.httpServer?.closeAllConnections();
    if (server.httpServer?.listening) await server.close();
    rmSync(directory, { recursive: true, force: true });
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const location: S3Location = { bucket, prefix: '', endpoint, region: 'us-east-1', forcePathStyle: true, credentials: CREDENTIALS };
  const s3 = createS3Client(location);
  scope.after(() => s3.destroy());
  return {
    location,
    url: (prefix = '') => `s3://${CREDENTIALS.accessKeyId}:${CREDENTIALS.secretAccessKey}@${bucket}/${prefix}?endpoint=${encodeURIComponent(endpoint)}`,
    async keys() {
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
      return (listed.Contents ?? []).map((object) => object.Key!);
    },
    async object(key) {
      const { Body } = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return buffer(Body as NodeJS.ReadableStream);
    },
  };
}
