import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import request from 'supertest';
import { deliver, expectError, OPS_KEY, ops, useTestApp } from '../support/test-app.js';

// What the API description (openapi.json) promises, checked against the answers of the real app.
// The routes come from the document, so a new route is covered without touching this file.

type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  schema?: Json;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: Json;
}
const document = JSON.parse(readFileSync(resolve(process.cwd(), 'openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
};
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
});
