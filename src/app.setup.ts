import type { Server } from 'node:http';
import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { Application, NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { API_TAGS } from './platform/common/api-tags.js';
import { callbackBodyMiddleware } from './intake/callbacks/callback-body.middleware.js';
import { DeliveryObserver } from './platform/deliveries/delivery-observer.js';
import { SIGNATURE_FORMAT } from './intake/callbacks/signature.guard.js';
import { CallbackCouponDto, realWinSchema } from './core/settlement/dto/callback-batch.dto.js';
import { partnerBodyMiddleware } from './platform/common/partner-body.js';
import { CurrencyValidationPipe } from './platform/common/validation.js';
import { consoleHeaders, isConsolePath, serveConsole } from './operations/console/console-pages.js';
import type { AppConfig } from './app.config.js';
import { ShutdownState } from './platform/health/shutdown-state.js';
import { Logger as PinoNestLogger } from 'nestjs-pino';
import { logContextMiddleware } from './platform/observability/log-context.js';
import { frameworkDetailAtDebug } from './platform/observability/logging.js';

/**
 * Everything `main.ts` and the end-to-end tests configure on the Nest application, so tests run
 * the app exactly as users start it: body readers (raw bytes on the callback path, JSON
 * elsewhere), validation, Swagger at `/docs`, the operator console at `/ops`, server timeouts against slow clients. The first
 * middleware counts requests in flight and answers new ones 503 once a shutdown has begun; logs
 * are JSON lines through nestjs-pino, each carrying its request id (and the callback's batchId).
 */
export function configureApp(app: INestApplication, config: AppConfig): void {
  // `req.ip` (clientAddressOf): X-Forwarded-For only from TRUSTED_PROXIES, else the TCP peer.
  (app.getHttpAdapter().getInstance() as Application).set(
    'trust proxy',
    config.http.trustedProxies.length ? config.http.trustedProxies : false,
  );
  // Nest's own start-up lines (one per module, controller and route: some 90) at debug: the info
  // lines of a start are the receiver's, the `listening on` line among a handful.
  app.useLogger(frameworkDetailAtDebug(app.get(PinoNestLogger)));
  app.use(app.get(ShutdownState).middleware());
  app.use(logContextMiddleware);
  // Security headers (helmet defaults: CSP, HSTS, nosniff, frame and referrer policies, no
  // X-Powered-By) on every answer; Swagger UI at /docs keeps them but without the CSP, which would
  // block its inline style and script; the operator console at /ops has its own strict CSP.
  const secureHeaders = helmet();
  const docsHeaders = helmet({ contentSecurityPolicy: false });
  const opsHeaders = consoleHeaders();
  app.use((req: Request, res: Response, next: NextFunction) =>
    (/^\/docs(\/|$|-json)/i.test(req.path)
      ? docsHeaders
      : isConsolePath(req.path)
        ? opsHeaders
        : secureHeaders)(req, res, next),
  );
  const observer = app.get(DeliveryObserver, { strict: false });
  const callbackReader = callbackBodyMiddleware(
    config.http.bodyLimitBytes,
    config.http.maxInflightBytes,
    () => observer.received(),
  );
  const callbackPath = config.http.callbackPath.replace(/\/+$/, '').toLowerCase();
  const partnerReader = partnerBodyMiddleware();
  app.use((req: Request, res: Response, next: NextFunction) => {
    // Express matches routes case-insensitively and with an optional trailing slash; so does this.
    if (req.path.replace(/\/+$/, '').toLowerCase() === callbackPath) return callbackReader(req, res, next);
    partnerReader(req, res, next);
  });
  app.useGlobalPipes(new CurrencyValidationPipe(config.money.currencies));
  serveConsole(app, config.console.consoleDir);
  const server = app.getHttpServer() as Server;
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  server.keepAliveTimeout = 5_000;
  // Node enforces requestTimeout/headersTimeout only when it sweeps its connections, every
  // connectionsCheckingInterval (default 30 s): a stalled client was cut off after ~30 s, not
  // 10 s. Read when the server starts listening, so it must be set before app.listen().
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = 1_000;
  if (config.http.swaggerEnabled) setupSwagger(app, config);
}

/**
 * The OpenAPI document of the app: every controller with the signature and bearer schemes. The
 * same function writes `openapi.json` (`npm run openapi`), so the file and `/docs-json` agree.
 */
export function buildOpenApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const builder = new DocumentBuilder();
  for (const tag of Object.values(API_TAGS)) builder.addTag(tag.name, tag.description);
  const document = SwaggerModule.createDocument(
    app,
    builder
      .setTitle('SportAPI settlement receiver')
      .setDescription(
        'Receives SportAPI coupon settlement callbacks and applies them exactly once to coupons, bets and balances. ' +
          `The callback is POST ${config.http.callbackPath}, signed with HMAC-SHA256 over the raw body. ` +
          'The partner API (coupons, accounts, reconciliation, quarantine, inbox) and the delivery audit need a bearer ' +
          'key from OPS_API_KEYS holding the scope of the route (x-required-scope: read, register, money or operate). ' +
          'Amounts are decimal strings. Probes: /health/live, /health/ready; Prometheus metrics: /metrics.',
      )
      .setVersion('1.0')
      .addBearerAuth({
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'opaque key',
        description:
          'one of OPS_API_KEYS (name:scopes:secret); a route answers 403 insufficient_scope to a key without its scope, ' +
          'and 429 instead of 401 to a missing or unknown key after AUTH_FAILURE_LIMIT failed authentications from one ' +
          'client address (a known key still passes)',
      })
      .addApiKey(
        {
          type: 'apiKey',
          in: 'header',
          name: 'X-Signature',
          description: SIGNATURE_FORMAT,
        },
        'signature',
      )
      .build(),
  );
  // The callback's realWin takes the fraction digits of this configuration's currencies (CONTRACT §3).
  const coupon = document.components?.schemas?.[CallbackCouponDto.name] as
    { properties?: Record<string, object> } | undefined;
  if (coupon?.properties)
    coupon.properties.realWin = {
      ...coupon.properties.realWin,
      ...realWinSchema(config.money.currencies.maxMinorUnits),
    };
  closeRequestBodies(document, config.http.callbackPath);
  return document;
}

/**
 * `additionalProperties: false` on the schema of every partner API request body and the schemas
 * it nests: the validation pipe refuses a field its DTO does not declare (CONTRACT §10). Not the
 * callback's, whose unknown fields are kept (CONTRACT §3).
 */
function closeRequestBodies(document: OpenAPIObject, callbackPath: string): void {
  const schemas = (document.components?.schemas ?? {}) as Record<string, Record<string, unknown>>;
  const closed = new Set<string>();
  const close = (schema: unknown): void => {
    if (schema === null || typeof schema !== 'object') return;
    const s = schema as Record<string, unknown>;
    const ref = typeof s.$ref === 'string' ? s.$ref.replace('#/components/schemas/', '') : undefined;
    if (ref !== undefined) {
      if (closed.has(ref)) return;
      closed.add(ref);
      return close(schemas[ref]);
    }
    if (s.type === 'object' || s.properties) s.additionalProperties = false;
    for (const p of Object.values((s.properties ?? {}) as Record<string, unknown>)) close(p);
    close(s.items);
    for (const branch of [s.oneOf, s.anyOf, s.allOf]) if (Array.isArray(branch)) branch.forEach(close);
  };
  for (const [path, operations] of Object.entries(document.paths))
    if (path !== callbackPath)
      for (const operation of Object.values(operations as Record<string, { requestBody?: unknown }>)) {
        const body = operation?.requestBody as { content?: Record<string, { schema?: unknown }> } | undefined;
        for (const media of Object.values(body?.content ?? {})) close(media.schema);
      }
}

/**
 * Swagger UI at `/docs` (`/docs/` redirects there, and `GET /` to it), OpenAPI JSON at
 * `/docs-json`, with the signature and bearer schemes.
 */
export function setupSwagger(app: INestApplication, config: AppConfig): void {
  app.use((req: Request, res: Response, next: NextFunction) => {
    // The UI's page loads its assets relative to `/docs`; from `/docs/` they would 404.
    if (req.path === '/docs/') return res.redirect(301, '/docs');
    // The root has nothing of its own: point a browser at the API description (302: it may change).
    if (req.path === '/' && (req.method === 'GET' || req.method === 'HEAD'))
      return res.redirect(302, '/docs');
    next();
  });
  SwaggerModule.setup('docs', app, buildOpenApiDocument(app, config), { jsonDocumentUrl: 'docs-json' });
}
