import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import request from 'supertest';
import { useTestApp } from '../support/test-app.js';

// The API description in the repository (`openapi.json`, written by `npm run openapi`) is the one
// the app serves at /docs-json; every documented response shows an example in Swagger UI.

type Json = Record<string, unknown>;

describe('OpenAPI document', () => {
  const t = useTestApp();
  let served: Json;
  beforeAll(async () => {
    const res = await request(t.app.getHttpServer()).get('/docs-json');
    expect(res.status).toBe(200);
    served = res.body as Json;
  });

  it('openapi.json is current (run `npm run openapi` after changing an endpoint)', () => {
    const file = JSON.parse(readFileSync(resolve(process.cwd(), 'openapi.json'), 'utf8')) as Json;
    expect(served).toEqual(file);
  });

  it('serves Swagger UI at /docs with its assets; /docs/ redirects there', async () => {
    const http = request(t.app.getHttpServer());
    const page = await http.get('/docs');
    expect([page.status, page.headers['content-type']]).toEqual([200, 'text/html; charset=utf-8']);
    const css = /href="([^"]*swagger-ui\.css)"/.exec(page.text)?.[1] ?? '';
    expect((await http.get(new URL(css, 'http://x/docs').pathname)).status).toBe(200);
    const slash = await http.get('/docs/');
    expect([slash.status, slash.headers.location]).toEqual([301, '/docs']);
  });

  it('GET / redirects to Swagger UI (302 /docs); another method or path is still a 404', async () => {
    const http = request(t.app.getHttpServer());
    for (const res of [await http.get('/'), await http.head('/')])
      expect([res.status, res.headers.location]).toEqual([302, '/docs']);
    expect((await http.post('/').send({})).status).toBe(404);
  });

  it('declares every tag with a one-line description; operations use only those', () => {
    const tags = served.tags as { name: string; description: string }[];
    expect(tags.map((tag) => tag.name)).toEqual([
      'callback',
      'coupons',
      'accounts',
      'reconciliation',
      'quarantine',
      'inbox',
      'delivery audit',
      'wallet',
      'settlement events',
      'operator console',
      'bulk actions',
      'operator actions',
      'health and metrics',
    ]);
    for (const tag of tags)
      expect({ tag: tag.name, oneLine: /^[^\n]{20,120}$/.test(tag.description) }).toEqual({
        tag: tag.name,
        oneLine: true,
      });
    const used = new Set<string>();
    for (const operations of Object.values(
      served.paths as Record<string, Record<string, { tags: string[] }>>,
    ))
      for (const operation of Object.values(operations)) operation.tags.forEach((tag) => used.add(tag));
    expect([...used].sort()).toEqual(tags.map((tag) => tag.name).sort());
  });

  it('no Markdown description holds a bare <placeholder> (Swagger UI would drop it as an HTML tag)', () => {
    const bare: string[] = [];
    const walk = (value: unknown, path: string): void => {
      if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${path}[${i}]`));
      else if (value !== null && typeof value === 'object')
        for (const [key, v] of Object.entries(value)) {
          if (
            key === 'description' &&
            typeof v === 'string' &&
            /<[^>\s][^>]*>/.test(v.replace(/`[^`]*`/g, ''))
          )
            bare.push(`${path}: ${v}`);
          else walk(v, `${path}.${key}`);
        }
    };
    walk(served, '');
    expect(bare).toEqual([]);
  });

  it('limit query parameters are integers with their range', () => {
    const limits: Record<string, unknown> = {};
    for (const [path, operations] of Object.entries(served.paths as Record<string, Record<string, Json>>))
      for (const operation of Object.values(operations))
        for (const p of (operation.parameters ?? []) as { name: string; in: string; schema: unknown }[])
          if (p.name === 'limit') limits[path] = { in: p.in, schema: p.schema };
    const range = (maximum: number, dflt: number) => ({
      in: 'query',
      schema: { type: 'integer', minimum: 1, maximum, default: dflt, example: dflt },
    });
    expect(limits).toEqual({
      // Every list pages by one rule (src/platform/common/pagination.ts): limit 1..200, default 50.
      '/callbacks/deliveries': range(200, 50),
      '/callbacks/quarantine': range(200, 50),
      '/callbacks/inbox': range(200, 50),
      '/wallet/outbox': range(200, 50),
      '/events/{publisher}/outbox': range(200, 50),
      '/accounts': range(200, 50),
      '/accounts/{id}/statement': range(200, 50),
      '/coupons': range(200, 50),
      '/coupons/{coupon_code}/history': range(200, 50),
      '/operator-actions': range(200, 50),
      '/bulk-actions': range(200, 50),
      '/bulk-actions/{id}': range(200, 50),
    });
  });

  it('documents the operations endpoints', () => {
    const paths = Object.keys(served.paths as Json).sort();
    expect(paths).toEqual(
      expect.arrayContaining([
        '/sportapi/callback',
        '/health/live',
        '/health/ready',
        '/metrics',
        '/callbacks/batches/{batchId}',
        '/callbacks/deliveries',
      ]),
    );
  });

  it('every response code of every operation has an example (inline, or from the examples of its schema)', () => {
    const schemas = (served.components as { schemas: Record<string, Json> }).schemas;
    const exemplified = (schema: Json | undefined, seen = new Set<string>()): boolean => {
      if (!schema) return false;
      if ('example' in schema) return true;
      const ref = schema.$ref as string | undefined;
      if (ref) {
        const name = ref.replace('#/components/schemas/', '');
        if (seen.has(name)) return true;
        seen.add(name);
        return exemplified(schemas[name], seen);
      }
      if (schema.type === 'array') return exemplified(schema.items as Json, seen);
      const properties = schema.properties as Record<string, Json> | undefined;
      if (properties) return Object.values(properties).every((p) => exemplified(p, seen));
      const all = (schema.allOf ?? schema.oneOf) as Json[] | undefined;
      return all ? all.every((s) => exemplified(s, seen)) : false;
    };
    const missing: string[] = [];
    for (const [path, operations] of Object.entries(served.paths as Record<string, Json>)) {
      for (const [method, operation] of Object.entries(operations as Record<string, Json>)) {
        for (const [code, response] of Object.entries(operation.responses as Record<string, Json>)) {
          const content = Object.values((response.content ?? {}) as Record<string, Json>);
          const ok =
            content.length > 0 &&
            content.every((c) => 'example' in c || 'examples' in c || exemplified(c.schema as Json));
          if (!ok) missing.push(`${method.toUpperCase()} ${path} ${code}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
