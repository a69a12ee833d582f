import { deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import request from 'supertest';
import { arbitraryOf, loadOpenApi, resolveRef, schemaValidator, violationsOf } from '../support/openapi.js';
import type { OpenApiOperation, Schema } from '../support/openapi.js';
import {
  batchOf,
  deliver,
  deposit,
  expectError,
  OPS_KEY,
  ops,
  quarantinedConflict,
  quarantinedInvalid,
  register,
  sign,
  useTestApp,
} from '../support/test-app.js';

// What the API description (openapi.json) promises, checked against the answers of the real app.
// The routes come from the document, so a new route is covered without touching this file.

type Operation = OpenApiOperation;
const document = loadOpenApi();
const valid = schemaValidator(document);
const CALLBACK = '/sportapi/callback';

/** Every operation of the document with a request body: `[method, path, operation]`. */
const withBody = Object.entries(document.paths).flatMap(([path, operations]) =>
  Object.entries(operations)
    .filter(([, operation]) => operation.requestBody !== undefined)
    .map(([method, operation]) => [method.toUpperCase(), path, operation] as const),
);

/** A concrete path for a templated one: each `{parameter}` is its example, else `1`. */
const concrete = (path: string, operation: Operation) =>
  path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const p = operation.parameters?.find((q) => q.in === 'path' && q.name === name);
    return encodeURIComponent(String(p?.schema?.example ?? '1'));
  });

const callback = document.paths[CALLBACK].post;
const batchSchema = callback.requestBody!.content['application/json'].schema;
const encodingSchema = callback.parameters!.find((p) => p.name === 'Content-Encoding')!.schema!;

interface Batch {
  batchId: string;
  couponCount: number;
  coupons: { coupon_code: string; events: { uuid: string }[] }[];
}

/**
 * The rules of the batch that span fields, which a JSON schema cannot state and the document's
 * descriptions do (CONTRACT §3): `couponCount` equals the number of coupons, no `coupon_code`
 * twice, no `uuid` twice within a coupon. A generated batch is made to keep them (the first of
 * equal codes or uuids stays), with a `batchId` of its own (a prefix; still 1..64 characters).
 */
let serial = 0;
function keepBatchRules(generated: unknown): Batch {
  const batch = structuredClone(generated) as Batch;
  const codes = new Set<string>();
  batch.coupons = batch.coupons.filter((c) => !codes.has(c.coupon_code) && codes.add(c.coupon_code));
  for (const c of batch.coupons) {
    const uuids = new Set<string>();
    c.events = c.events.filter((e) => !uuids.has(e.uuid) && uuids.add(e.uuid));
  }
  batch.couponCount = batch.coupons.length;
  batch.batchId = [...`oc${++serial}-${batch.batchId}`].slice(0, 64).join('');
  return batch;
}

/** The bytes of `body` as sent with `encoding` (any case), and that header. */
function encoded(body: string, encoding: string | null): { bytes: Buffer; headers: Record<string, string> } {
  const raw = Buffer.from(body);
  if (encoding === null) return { bytes: raw, headers: {} };
  const name = encoding.toLowerCase();
  const bytes = name.endsWith('gzip') ? gzipSync(raw) : name === 'deflate' ? deflateSync(raw) : raw;
  return { bytes, headers: { 'content-encoding': encoding } };
}

describe('OpenAPI conformance', () => {
  const t = useTestApp();

  describe('a body that is not a JSON object is 400 on every route with a body (issue 38, item 1)', () => {
    it('the document has such routes, the callback among them', () => {
      expect(withBody.length).toBeGreaterThanOrEqual(10);
      expect(withBody.map(([, path]) => path)).toContain(CALLBACK);
    });

    it('no body at all is an empty object: POST /wallet/pause and /wallet/resume answer 200', async () => {
      const http = request(t.app.getHttpServer());
      const auth = { authorization: `Bearer ${OPS_KEY}` };
      const paused = await http.post('/wallet/pause').set(auth);
      expect([paused.status, paused.body.paused, paused.body.reason]).toEqual([200, true, null]);
      const resumed = await http.post('/wallet/resume').set(auth);
      expect([resumed.status, resumed.body.paused]).toEqual([200, false]);
    });

    const cases = withBody.flatMap(([method, path, operation]) =>
      ['null', '[]', '1', '"x"'].map((body) => [method, path, body, operation] as const),
    );
    it.each(cases)('%s %s with the body %s', async (method, path, body, operation) => {
      expect(method).toBe('POST');
      if (path === CALLBACK) {
        const res = await deliver(t.app, body);
        expectError(res, 400, 'validation_failed');
        expect(res.body.error).toEqual({
          code: 'validation_failed',
          message: 'the body must be a JSON object',
          fields: [{ path: '', message: 'must be an object' }],
        });
        return;
      }
      const res = await ops(t.app).post(concrete(path, operation), body, {
        'content-type': 'application/json',
        'idempotency-key': 'openapi-not-an-object',
      });
      expectError(res, 400, 'validation_failed');
      expect(res.body.error).toEqual({
        code: 'validation_failed',
        message: 'the request does not match the schema',
        fields: [{ path: '', message: 'must be an object' }],
      });
    });
  });

  describe('callback bodies generated from the document (issue 38, item 2)', () => {
    const batches = arbitraryOf(document, batchSchema).map(keepBatchRules);
    const encodings = fc.option(arbitraryOf(document, encodingSchema) as fc.Arbitrary<string>, { nil: null });

    it('every body valid for the document (and its stated cross-field rules) is answered 200', async () => {
      await fc.assert(
        fc.asyncProperty(batches, encodings, async (batch, encoding) => {
          expect(valid(batchSchema, batch)).toEqual([]);
          const body = JSON.stringify(batch);
          const { bytes, headers } = encoded(body, encoding);
          const res = await deliver(t.app, bytes, { signature: sign(body), headers });
          expect([res.status, res.body]).toEqual([200, { success: true, processed: batch.couponCount }]);
        }),
        { numRuns: 60 },
      );
    }, 300_000);

    it.each(['identity', 'gzip', 'GZIP', 'x-gzip', 'X-Gzip', 'deflate', 'Deflate'])(
      "Content-Encoding %s (the header schema's pattern) is decoded and answered 200",
      async (encoding) => {
        expect(new RegExp(encodingSchema.pattern as string, 'u').test(encoding)).toBe(true);
        const batch = keepBatchRules({
          batchId: `enc-${encoding}`,
          couponCount: 1,
          coupons: [{ coupon_code: `enc-${encoding}`, status: 1, events: [] }],
        });
        const body = JSON.stringify(batch);
        const { bytes, headers } = encoded(body, encoding);
        const res = await deliver(t.app, bytes, { signature: sign(body), headers });
        expect([res.status, res.body]).toEqual([200, { success: true, processed: 1 }]);
      },
    );

    it('a body the document refuses at one place is answered 400 validation_failed', async () => {
      const refused = batches.chain((batch) => {
        const ways = violationsOf(document, batchSchema, batch);
        return fc.constantFrom(...ways).map((way) => ({ way, body: way.apply(batch) }));
      });
      await fc.assert(
        fc.asyncProperty(refused, async ({ way, body }) => {
          expect(valid(batchSchema, body)).not.toEqual([]);
          const res = await deliver(t.app, body);
          expect({ rule: way.rule, path: way.path, status: res.status, code: res.body.error?.code }).toEqual({
            rule: way.rule,
            path: way.path,
            status: 400,
            code: 'validation_failed',
          });
        }),
        { numRuns: 80 },
      );
    }, 300_000);

    it('the status fields are int32 integers; identifiers carry their lengths and pattern', () => {
      const coupon = resolveRef(document, { $ref: '#/components/schemas/CallbackCouponDto' });
      const event = resolveRef(document, { $ref: '#/components/schemas/CallbackEventDto' });
      const props = (s: Schema) => s.properties as Record<string, Schema>;
      const int32 = { type: 'integer', format: 'int32', minimum: -2147483648, maximum: 2147483647 };
      expect(props(coupon).status).toMatchObject(int32);
      expect(props(event).status).toMatchObject(int32);
      expect(props(resolveRef(document, batchSchema)).couponCount).toMatchObject({
        type: 'integer',
        minimum: 1,
        maximum: 100,
      });
      for (const [schema, max] of [
        [props(resolveRef(document, batchSchema)).batchId, 64],
        [props(coupon).coupon_code, 32],
        [props(event).uuid, 64],
      ] as const)
        expect(schema).toMatchObject({
          type: 'string',
          minLength: 1,
          maxLength: max,
          pattern: expect.any(String),
        });
      expect(encodingSchema.pattern).toEqual(expect.any(String));
    });
  });

  describe('the answers and the document agree (issue 38, item 3)', () => {
    /** The documented schema of the 200 answer of `GET path`. */
    const answerSchema = (path: string) =>
      document.paths[path].get.responses['200'].content!['application/json'].schema!;

    it('every list and record answers as its documented schema says (nulls, details arrays included)', async () => {
      await deposit(t.app, 'oc-player', '100.00');
      await register(t.app, 'oc-000001', 'oc-player', '10.00');
      const settled = await deliver(
        t.app,
        batchOf('oc-b-1', { code: 'oc-000001', status: 2, realWin: '25.00' }),
      );
      expect(settled.status).toBe(200);
      await deliver(t.app, batchOf('oc-b-2', { code: 'oc-000002', status: 1 }));
      const invalid = await quarantinedInvalid(t, 'oc-b-invalid', 'oc-000003');
      const conflict = await quarantinedConflict(
        t,
        batchOf('oc-b-conflict', { code: 'oc-000004', status: 1 }),
      );
      const bulk = await ops(t.app).post('/bulk-actions', {
        kind: 'quarantine_replay',
        filter: { batchIdPrefix: 'oc-none-' },
        reason: 'openapi conformance',
      });
      expect(bulk.status).toBe(202);

      const reads: [string, string][] = [
        ['/accounts', '/accounts'],
        ['/accounts/{id}', '/accounts/oc-player'],
        ['/accounts/{id}/statement', '/accounts/oc-player/statement'],
        ['/coupons', '/coupons'],
        ['/coupons/{coupon_code}', '/coupons/oc-000001'],
        ['/coupons/{coupon_code}/history', '/coupons/oc-000001/history'],
        ['/callbacks/inbox', '/callbacks/inbox'],
        ['/callbacks/quarantine', '/callbacks/quarantine'],
        ['/callbacks/quarantine/{id}', `/callbacks/quarantine/${invalid}`],
        ['/callbacks/quarantine/{id}', `/callbacks/quarantine/${conflict}`],
        ['/callbacks/batches/{batchId}', '/callbacks/batches/oc-b-1'],
        ['/callbacks/deliveries', '/callbacks/deliveries'],
        ['/wallet/outbox', '/wallet/outbox'],
        ['/wallet/status', '/wallet/status'],
        ['/events/status', '/events/status'],
        ['/operator-actions', '/operator-actions'],
        ['/bulk-actions', '/bulk-actions'],
        ['/bulk-actions/{id}', `/bulk-actions/${bulk.body.id as string}`],
        ['/overview', '/overview'],
      ];
      const problems: Record<string, string[]> = {};
      for (const [path, url] of reads) {
        const res = await ops(t.app).get(url);
        expect([url, res.status]).toEqual([url, 200]);
        const errors = valid(answerSchema(path), res.body);
        if (errors.length) problems[url] = errors;
      }
      expect(problems).toEqual({});
      // What the fuzzer met: a validation_failed entry's details are its field errors (an array).
      const entry = await ops(t.app).get(`/callbacks/quarantine/${invalid}`);
      expect([entry.body.reason, Array.isArray(entry.body.details)]).toEqual(['validation_failed', true]);
    });

    it('every operation that validates a body or query documents its 400', () => {
      const missing: string[] = [];
      for (const [path, operations] of Object.entries(document.paths))
        for (const [method, operation] of Object.entries(operations))
          if (
            (operation.requestBody || operation.parameters?.some((p) => p.in === 'query')) &&
            !operation.responses['400']
          )
            missing.push(`${method.toUpperCase()} ${path}`);
      expect(missing).toEqual([]);
    });

    it('error answers are documented as JSON, as they are sent (/metrics 401 included)', async () => {
      const notJson: string[] = [];
      for (const [path, operations] of Object.entries(document.paths))
        for (const [method, operation] of Object.entries(operations))
          for (const [code, response] of Object.entries(operation.responses))
            if (Number(code) >= 400 && Object.keys(response.content ?? {}).join() !== 'application/json')
              notJson.push(`${method.toUpperCase()} ${path} ${code}`);
      expect(notJson).toEqual([]);
      const res = await request(t.app.getHttpServer()).get('/metrics').set('x-forwarded-for', '203.0.113.9');
      expectError(res, 401, 'unauthorized');
      const documented = document.paths['/metrics'].get.responses['401'].content!['application/json'].schema!;
      expect(valid(documented, res.body)).toEqual([]);
    });

    it('limits stated in descriptions are in the schemas: cursor, Idempotency-Key, from/to, reason, no unknown fields', () => {
      const query = (path: string, name: string) =>
        document.paths[path].get.parameters!.find((p) => p.name === name)!.schema!;
      expect(query('/callbacks/quarantine', 'cursor')).toMatchObject({ pattern: '^[1-9]\\d{0,17}$' });
      expect(query('/bulk-actions', 'cursor')).toMatchObject({ maxLength: 512, pattern: '^[A-Za-z0-9_-]+$' });
      for (const [path, name] of [
        ['/callbacks/deliveries', 'from'],
        ['/callbacks/deliveries', 'to'],
        ['/operator-actions', 'from'],
        ['/coupons', 'updatedTo'],
      ])
        expect(query(path, name)).toMatchObject({ type: 'string', format: 'date-time' });
      for (const path of ['/accounts/{id}/adjustments', '/coupons/{coupon_code}/resolution'])
        expect(
          document.paths[path].post.parameters!.find((p) => p.name === 'Idempotency-Key')!.schema,
        ).toEqual({ type: 'string', pattern: '^[A-Za-z0-9._~+/=@-]{1,128}$' });
      const open: string[] = [];
      const reasons: Record<string, unknown> = {};
      for (const [path, operations] of Object.entries(document.paths))
        for (const [method, operation] of Object.entries(operations)) {
          if (!operation.requestBody || path === CALLBACK) continue;
          const body = resolveRef(document, operation.requestBody.content['application/json'].schema);
          if (body.additionalProperties !== false) open.push(`${method.toUpperCase()} ${path}`);
          const reason = (body.properties as Record<string, Schema> | undefined)?.reason;
          if (reason)
            reasons[`${method.toUpperCase()} ${path}`] = { min: reason.minLength, max: reason.maxLength };
        }
      expect(open).toEqual([]);
      expect(reasons).toEqual({
        'POST /accounts/{id}/adjustments': { min: 1, max: 500 },
        'POST /coupons/{coupon_code}/resolution': { min: 1, max: 1000 },
        'POST /wallet/outbox/{id}/skip': { min: 1, max: 500 },
        'POST /wallet/pause': { min: 1, max: 500 },
        'POST /events/{publisher}/outbox/{id}/skip': { min: 1, max: 500 },
        'POST /events/{publisher}/pause': { min: 1, max: 500 },
        'POST /bulk-actions': { min: 1, max: 500 },
        'POST /bulk-actions/{id}/cancel': { min: 1, max: 500 },
      });
    });
  });
});
